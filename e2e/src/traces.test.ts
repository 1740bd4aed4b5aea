import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  ChatResponse,
  MissionResponse,
  RunsGetResponse,
  ScheduleResponse,
} from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  isTurnRequest,
  type OtlpReceiver,
  type ReceivedSpan,
  type StackFixture,
  sentMessages,
  spanTree,
  startOtlpReceiver,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The pinned GenAI semantic conventions, as the services' tracer names them (packages/telemetry).
const SCHEMA_URL = 'https://opentelemetry.io/schemas/1.37.0';
const SERVICES_ON_THE_PATH = ['gateway', 'orchestrator', 'memory', 'model-gateway', 'tools'];
// Words only the user's message and the page hold: neither may reach a span unless the install
// turns content capture on.
const SECRET_WORD = 'Zanzibar';

// A span's ancestors within its trace, nearest first.
function ancestorsIn(trace: ReceivedSpan[], span: ReceivedSpan): ReceivedSpan[] {
  const byId = new Map(trace.map((candidate) => [candidate.spanId, candidate]));
  const chain: ReceivedSpan[] = [];
  for (let at = span.parentSpanId && byId.get(span.parentSpanId); at; ) {
    chain.push(at);
    at = at.parentSpanId ? byId.get(at.parentSpanId) : undefined;
  }
  return chain;
}

// One turn through the whole stack, with every service exporting its spans over OTLP/HTTP in
// JSON to a receiver this test runs: the fake model asks for web_fetch (run by the tools
// service against a page served here), then answers. The turn is one trace, with the GenAI
// conventions' span names and attributes, linked parent to child across NATS.
describe('traces', () => {
  let fixture: StackFixture;
  let receiver: OtlpReceiver;
  let key: string;
  let site: Server;
  let siteUrl: string;

  const offeredTools = (request: FakeLlmRequest | undefined): string[] => {
    const body = request?.body;
    if (typeof body !== 'object' || body === null || !('tools' in body)) return [];
    if (!Array.isArray(body.tools)) return [];
    return body.tools.map((tool: { function?: { name?: string } }) => tool.function?.name ?? '');
  };

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };

  const chat = async (message: string) => {
    const response = await fixture.chat(key, { message });
    expect(response.status).toBe(200);
    return ChatResponse.parse(await response.json());
  };

  beforeAll(async () => {
    site = createServer((_request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(
        `<html><head><title>Ferry</title></head><body><p>${SECRET_WORD} ferry at 9.</p></body></html>`,
      );
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    receiver = await startOtlpReceiver();
    fixture = await startStackFixture({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      // The query is embedded on recall, so the turn's trace has an embeddings span.
      MODEL_ROUTE_EMBED: 'openai/fake-embed',
    });
    key = (await fixture.createUser('tracy')).apiKey;
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool').length;
      return results === 0
        ? { toolCalls: [{ name: 'web_fetch', arguments: { url: `${siteUrl}/ferry` } }] }
        : { content: 'The ferry leaves at 9.' };
    });
    // The services start side by side: the orchestrator picks up the tools service's list on a
    // later try. Warm-up turns call no tool until web_fetch is offered.
    await waitFor(
      async () => {
        const response = await fixture.chat(key, { message: 'Are you there?' });
        await response.body?.cancel();
        const last = fixture.fake.chatRequests().filter(isTurnRequest).at(-1);
        return offeredTools(last).includes('web_fetch');
      },
      { timeoutMs: 30_000, intervalMs: 500, what: 'web_fetch to be offered to the model' },
    );
    // Memory embeds a query only once it has read model-gateway's embed route, which it does
    // in the background; its first embeddings (of the messages above) show it has.
    await receiver.waitForSpans(
      (spans) => spans.some((span) => span.name === 'embeddings fake-embed'),
      { timeoutMs: 45_000 },
    );
    // The stack's start, the tools' list and memory's embed route each wait on their own.
  }, 180_000);

  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
  });

  it('makes one trace of a turn with a tool call, across every service on its path', async () => {
    const reply = await chat(`When does the ${SECRET_WORD} ferry leave? Check the timetable.`);
    expect(reply.reply.content).toBe('The ferry leaves at 9.');

    const isTurnAgent = (span: ReceivedSpan) =>
      span.name === 'invoke_agent' && span.attributes['jarvis.run.id'] === reply.runId;
    // Complete once the turn's spans are in and every span of its trace has its parent there:
    // the services export in batches, each on its own clock.
    const spans = await receiver.waitForSpans(
      (all) => {
        const agent = all.find(isTurnAgent);
        if (!agent) return false;
        const trace = all.filter((span) => span.traceId === agent.traceId);
        const ids = new Set(trace.map((span) => span.spanId));
        const names = new Set(trace.map((span) => span.name));
        return (
          ['execute_tool web_fetch', 'retrieval', 'embeddings fake-embed'].every((name) =>
            names.has(name),
          ) &&
          trace.filter((span) => span.name === 'chat fake-chat').length >= 2 &&
          SERVICES_ON_THE_PATH.every((service) => trace.some((span) => span.service === service)) &&
          trace.some((span) => span.service === 'gateway' && !span.parentSpanId) &&
          trace.every((span) => !span.parentSpanId || ids.has(span.parentSpanId))
        );
      },
      { timeoutMs: 45_000 },
    );
    const agent = spans.find(isTurnAgent) as ReceivedSpan;
    const trace = spans.filter((span) => span.traceId === agent.traceId);
    console.log(`the turn's trace, ${trace.length} spans:\n${spanTree(trace)}`);

    const ancestorsOf = (span: ReceivedSpan) => ancestorsIn(trace, span);
    const descends = (span: ReceivedSpan, from: ReceivedSpan) =>
      ancestorsOf(span).some((ancestor) => ancestor.spanId === from.spanId);

    // One trace: a single root (the gateway's request), every other span's parent in it; the
    // run records the same trace.
    const roots = trace.filter((span) => !span.parentSpanId);
    expect(roots.map((span) => `${span.name} [${span.service}]`)).toEqual(['POST /chat [gateway]']);
    const run = await fetch(`${fixture.stack.gatewayUrl}/v1/runs/${reply.runId}`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(RunsGetResponse.parse(await run.json()).run.traceId).toBe(agent.traceId);

    // Every service on the path, named as the issue fixes.
    const services = new Set(trace.map((span) => span.service));
    for (const service of SERVICES_ON_THE_PATH) expect(services).toContain(service);

    expect(agent.service).toBe('orchestrator');
    expect(agent.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.agent.name': 'jarvis',
      'gen_ai.conversation.id': reply.conversationId,
      'jarvis.run.id': reply.runId,
    });
    expect(agent.schemaUrl).toBe(SCHEMA_URL);

    // The turn's own model calls (the one that asked for the tool, the one that answered): each
    // chat <- handle (model-gateway) <- request (orchestrator) <- invoke_agent. Fact extraction,
    // queued by the turn, makes another one further down the same trace.
    const chats = trace.filter((span) => {
      if (span.name !== 'chat fake-chat') return false;
      const [handle, request, caller] = ancestorsOf(span);
      return (
        handle?.service === 'model-gateway' &&
        request?.service === 'orchestrator' &&
        caller?.spanId === agent.spanId
      );
    });
    expect(chats).toHaveLength(2);
    for (const span of chats) {
      expect(span.service).toBe('model-gateway');
      expect(span.schemaUrl).toBe(SCHEMA_URL);
      expect(span.attributes).toMatchObject({
        'gen_ai.operation.name': 'chat',
        'gen_ai.provider.name': 'openai',
        'gen_ai.request.model': 'fake-chat',
        'gen_ai.usage.input_tokens': expect.any(Number),
        'gen_ai.usage.output_tokens': expect.any(Number),
        'jarvis.usage.cost_usd': expect.any(Number),
      });
    }
    expect(chats.map((span) => span.attributes['gen_ai.response.finish_reasons'])).toEqual([
      ['tool_calls'],
      ['stop'],
    ]);

    const tool = trace.find((span) => span.name === 'execute_tool web_fetch') as ReceivedSpan;
    expect(tool.service).toBe('orchestrator');
    expect(descends(tool, agent)).toBe(true);
    expect(tool.attributes).toMatchObject({
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'web_fetch',
      'gen_ai.tool.call.id': expect.any(String),
      'gen_ai.tool.type': 'function',
      'jarvis.tool.status': 'ok',
    });
    // The tools service did the fetch, as a child of the call, across NATS.
    expect(trace.filter((span) => span.service === 'tools' && descends(span, tool))).not.toEqual(
      [],
    );

    const retrieval = trace.find((span) => span.name === 'retrieval') as ReceivedSpan;
    expect(retrieval.parentSpanId).toBe(agent.spanId);
    expect(retrieval.attributes).toMatchObject({
      'gen_ai.operation.name': 'retrieval',
      'gen_ai.data_source.id': 'jarvis-memory',
      'jarvis.retrieval.items': expect.any(Number),
      'jarvis.retrieval.recent': expect.any(Number),
    });
    expect(trace.some((span) => span.service === 'memory' && descends(span, retrieval))).toBe(true);
    // Recall embeds the query: memory asks model-gateway, within the retrieval.
    const embeddings = trace.filter(
      (span) => span.name === 'embeddings fake-embed' && descends(span, retrieval),
    );
    expect(embeddings).not.toEqual([]);
    expect(embeddings[0]?.attributes).toMatchObject({
      'gen_ai.operation.name': 'embeddings',
      'gen_ai.provider.name': 'openai',
      'gen_ai.request.model': 'fake-embed',
    });

    // Content capture is off by default: neither the message nor the page is in any span.
    expect(JSON.stringify(trace)).not.toContain(SECRET_WORD);
  });

  it('continues a schedule firing into the turn it submits, in one trace', async () => {
    const created = await api('POST', '/v1/schedules', {
      kind: 'once',
      at: new Date(Date.now() + 1_000).toISOString(),
      action: { type: 'prompt', instruction: 'Brief me on the ferries.' },
    });
    expect(created.status).toBe(201);
    const { schedule } = ScheduleResponse.parse(created.body);

    const firingOf = (all: ReceivedSpan[]) =>
      all.find(
        (span) =>
          span.name === 'fire_schedule' && span.attributes['jarvis.schedule.id'] === schedule.id,
      );
    const spans = await receiver.waitForSpans(
      (all) => {
        const firing = firingOf(all);
        return (
          firing !== undefined &&
          all.some((span) => span.name === 'invoke_agent' && span.traceId === firing.traceId)
        );
      },
      { timeoutMs: 45_000 },
    );
    const firing = firingOf(spans) as ReceivedSpan;
    const trace = spans.filter((span) => span.traceId === firing.traceId);
    console.log(`a schedule's firing, ${trace.length} spans:\n${spanTree(trace)}`);
    expect(firing.service).toBe('scheduler');
    expect(firing.parentSpanId).toBeUndefined();
    expect(firing.attributes).toMatchObject({
      'jarvis.schedule.action_type': 'prompt',
      'jarvis.schedule.lateness_ms': expect.any(Number),
    });
    const agent = trace.find((span) => span.name === 'invoke_agent') as ReceivedSpan;
    expect(ancestorsIn(trace, agent).map((span) => span.spanId)).toContain(firing.spanId);
    const runId = String(agent.attributes['jarvis.run.id']);
    const run = RunsGetResponse.parse((await api('GET', `/v1/runs/${runId}`)).body).run;
    expect(run.traceId).toBe(firing.traceId);
  });

  it("runs a mission's task in a trace of its own, linked to where the mission started", async () => {
    const response = await fetch(`${fixture.stack.gatewayUrl}/v1/missions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        objective: 'Check the ferry timetable',
        tasks: [{ title: 'Read it', brief: 'Read the timetable.' }],
      }),
    });
    expect(response.status).toBe(202);
    const startedIn = response.headers.get('x-trace-id');
    const { mission } = MissionResponse.parse(await response.json());

    const taskOf = (all: ReceivedSpan[]) =>
      all.find(
        (span) =>
          span.name === 'invoke_agent' && span.attributes['jarvis.mission.id'] === mission.id,
      );
    const spans = await receiver.waitForSpans((all) => taskOf(all) !== undefined, {
      timeoutMs: 45_000,
    });
    const task = taskOf(spans) as ReceivedSpan;
    const trace = spans.filter((span) => span.traceId === task.traceId);
    console.log(`a mission's task, ${trace.length} spans:\n${spanTree(trace)}`);
    expect(task.parentSpanId).toBeUndefined();
    expect(task.traceId).not.toBe(startedIn);
    expect(task.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'jarvis.mission.id': mission.id,
      'jarvis.task.id': mission.tasks[0]?.id,
      'jarvis.run.id': expect.any(String),
    });
    // Its brief's memory search is its retrieval.
    expect(trace.find((span) => span.name === 'retrieval')).toMatchObject({
      parentSpanId: task.spanId,
      attributes: { 'jarvis.retrieval.items': expect.any(Number) },
    });
    // The link leads to the span the mission was created in, in the request's trace.
    expect(task.links).toHaveLength(1);
    expect(task.links[0]?.traceId).toBe(startedIn);
    const creator = spans.find((span) => span.spanId === task.links[0]?.spanId);
    expect(creator).toMatchObject({ service: 'orchestrator', traceId: startedIn });
    const runId = String(task.attributes['jarvis.run.id']);
    const run = RunsGetResponse.parse((await api('GET', `/v1/runs/${runId}`)).body).run;
    expect(run.traceId).toBe(task.traceId);
  });

  it('answers an export in protobuf 415: the receiver reads JSON only', async () => {
    const response = await fetch(`${receiver.url}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-protobuf' },
      body: new Uint8Array([10, 0]),
    });
    expect(response.status).toBe(415);
  });
});

// With MODEL_TELEMETRY_CONTENT=on a model call's span carries its prompt and reply, redacted even
// where the model itself is sent the real text (MODEL_REDACTION=off here, as for a local model).
describe('traces with content capture on', () => {
  let fixture: StackFixture;
  let receiver: OtlpReceiver;
  const EMAIL = 'tess.ferry@example.com';

  beforeAll(async () => {
    receiver = await startOtlpReceiver();
    fixture = await startStackFixture({
      OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      MODEL_TELEMETRY_CONTENT: 'on',
      MODEL_REDACTION: 'off',
    });
    fixture.fake.onChat((request) =>
      isTurnRequest(request)
        ? { content: `I will write to ${EMAIL}.` }
        : { content: '{"operations": []}' },
    );
  });

  afterAll(async () => {
    await fixture?.close();
    await receiver?.close();
  });

  it('puts the messages on the chat span with personal data as placeholders', async () => {
    const { apiKey } = await fixture.createUser('tess');
    const response = await fixture.chat(apiKey, { message: `Mail me at ${EMAIL} tonight.` });
    expect(response.status).toBe(200);
    const { runId } = ChatResponse.parse(await response.json());
    // The model was sent the address itself: redaction is off for it.
    const sent = fixture.fake.chatRequests().filter(isTurnRequest).at(-1);
    expect(JSON.stringify(sentMessages(sent))).toContain(EMAIL);

    const spans = await receiver.waitForSpans(
      (all) => {
        const agent = all.find(
          (span) => span.name === 'invoke_agent' && span.attributes['jarvis.run.id'] === runId,
        );
        return all.some(
          (span) => span.name === 'chat fake-chat' && span.traceId === agent?.traceId,
        );
      },
      { timeoutMs: 45_000 },
    );
    const agent = spans.find((span) => span.attributes['jarvis.run.id'] === runId);
    const chat = spans.find(
      (span) => span.name === 'chat fake-chat' && span.traceId === agent?.traceId,
    ) as ReceivedSpan;
    const input = String(chat.attributes['gen_ai.input.messages']);
    const output = String(chat.attributes['gen_ai.output.messages']);
    expect(input).toContain('tonight');
    expect(input).toMatch(/\[EMAIL_1\]/);
    expect(output).toMatch(/I will write to \[EMAIL_1\]/);
    expect(JSON.stringify(spans)).not.toContain(EMAIL);
  });
});
