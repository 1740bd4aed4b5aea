import { randomBytes, randomUUID } from 'node:crypto';
import {
  ApprovalsListResponse,
  ChatResponse,
  CreateApiKeyResponse,
  ENDPOINTS,
  ErrorBody,
  endpointName,
  ListApiKeysResponse,
  MemoryDocumentsIngestResponse,
  MemoryFactsGetResponse,
  MemoryFactsRememberResponse,
  MemoryFilesReadResponse,
  MemoryMessagesListResponse,
  MissionResponse,
  type Schedule,
  ScheduleResponse,
} from '@jarvis/contracts';
import {
  isTurnRequest,
  SERVICE_NAMES,
  type StackFixture,
  sentMessages,
  startStackFixture,
} from '@jarvis/testkit';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  describeRequest,
  type FuzzContext,
  type FuzzRequest,
  filledRequestFor,
  requestFor,
} from './fuzz-requests';
import { startTelegramStandIn, type TelegramStandIn } from './telegram-stand-in';

// Fixed, so a failure comes back the same; FUZZ_SEED tries another.
const SEED = Number(process.env.FUZZ_SEED ?? 20_260_611);
const RUNS_PER_ROUTE = 100;
// Valid input to these starts model turns or background work: fewer, so the file stays quick.
const RUNS_BY_ROUTE: Record<string, number> = {
  'POST /v1/chat': 15,
  'POST /v1/missions': 10,
};
const CROSS_USER_RUNS_PER_ROUTE = 6;
// Bodies with one field nested deep (past the gateway's 64 levels, and as deep as once made
// JSON.stringify overflow), long or wide, per route that takes a body.
const FILLED_RUNS_PER_ROUTE = 25;
const BODY_LIMIT_BYTES = 64 * 1_024;
const REQUEST_TIMEOUT_MS = 30_000;
const MAX_HEAD_BYTES = 12 * 1_024;

type Answer = { status: number; text: string };

// The OpenAPI document's operations: the gateway's own list of what it serves.
const OperationsByPath = z.object({
  paths: z.record(z.string(), z.record(z.string(), z.unknown())),
});

// What A holds, and what gives it away: every id and every piece of content only A has.
type Owner = {
  key: string;
  ids: {
    user: string;
    fact: string;
    document: string;
    conversation: string;
    importedConversation: string;
    run: string;
    turn: string;
    mission: string;
    approval: string;
    schedule: string;
    keys: string[];
    messages: string[];
  };
  filePath: string;
  // As A made it, to compare with after B's attempts.
  schedule: Schedule;
  secrets: string[];
};

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// Every declared endpoint, as user B (or the admin, or no one, as the route asks), with
// wrong, oversized and malformed input, and with A's real ids: never a 5xx, always the
// structured error for a 4xx, the stack still up after each route, and never A's data.
describe('fuzzing every /v1 route', () => {
  let fixture: StackFixture;
  let telegram: TelegramStandIn;
  let url: string;
  let owner: Owner;
  let bobKey: string;

  const call = async (method: string, path: string, key: string, body?: unknown) => {
    const response = await fetch(`${url}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: parseJson(await response.text()) };
  };

  async function send(request: FuzzRequest): Promise<Answer> {
    // A head over Node's 16 KB is refused (431) and the connection closed before any body is
    // read: a body would only race that close, and lose the answer to a reset.
    const headBytes = Object.entries(request.headers).reduce(
      (total, [name, value]) => total + name.length + value.length,
      request.path.length,
    );
    const hasBody = request.body !== undefined && headBytes < MAX_HEAD_BYTES;
    const response = await fetch(`${url}${request.path}`, {
      method: request.method,
      headers: request.headers,
      ...(hasBody ? { body: request.body } : {}),
      redirect: 'manual',
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    // The live events stream never ends by itself: its status is the answer. A streamed chat
    // turn does end, and is read to its last event.
    const isEndless =
      request.method === 'GET' &&
      (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
    if (isEndless) {
      await response.body?.cancel();
      return { status: response.status, text: '' };
    }
    return { status: response.status, text: await response.text() };
  }

  // A's ids that B has put in a request: B may make things of its own under them (a
  // conversation id is the client's to choose), so only A's content gives a leak away after.
  const namedByB = new Set<string>();

  async function check(request: FuzzRequest, isAdmin = false): Promise<void> {
    const answer = await send(request);
    const what = `${describeRequest(request)}\n  -> ${answer.status} ${answer.text.slice(0, 300)}`;
    expect(answer.status, what).toBeLessThan(500);
    if (answer.status >= 400) {
      expect(ErrorBody.safeParse(parseJson(answer.text)).success, what).toBe(true);
    }
    // The admin sees every user by design.
    if (isAdmin) return;
    const sent = `${request.path}\n${typeof request.body === 'string' ? request.body : ''}`;
    for (const secret of owner.secrets) if (sent.includes(secret)) namedByB.add(secret);
    const leaked = owner.secrets.filter(
      (secret) => answer.text.includes(secret) && !namedByB.has(secret),
    );
    expect(leaked, what).toEqual([]);
  }

  async function expectStackUp(): Promise<void> {
    for (const name of SERVICE_NAMES) {
      const child = fixture.stack.process(name)?.child;
      expect(child?.exitCode ?? child?.signalCode ?? null, `${name} exited`).toBeNull();
    }
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(200);
  }

  // A's data of every kind the API holds, each with content no one else has.
  async function seedOwner(name: string): Promise<Owner> {
    const created = await fixture.createUser(name);
    const key = created.apiKey;
    const secret = (label: string) => `${label}${randomBytes(8).toString('hex')}`;
    const words = {
      fact: secret('factsecret'),
      file: secret('filesecret'),
      document: secret('docsecret'),
      chat: secret('chatsecret'),
      imported: secret('importsecret'),
      mission: secret('missionsecret'),
      approval: secret('approvalsecret'),
      schedule: secret('schedulesecret'),
      keyName: secret('keyname'),
    };
    const filePath = `private/${secret('path')}.md`;

    const fact = MemoryFactsRememberResponse.parse(
      (await call('POST', '/v1/memory/facts', key, { content: `Locker code ${words.fact}` })).body,
    ).fact;
    const file = await call('PUT', '/v1/memory/files/content', key, {
      path: filePath,
      content: `The vault opens with ${words.file}`,
    });
    expect(file.status).toBe(200);
    const document = MemoryDocumentsIngestResponse.parse(
      (
        await call('POST', '/v1/memory/documents', key, {
          title: `Plans ${words.document}`,
          contentType: 'text/plain',
          content: `The treasure lies under ${words.document}.`,
        })
      ).body,
    ).document;
    const chat = ChatResponse.parse(
      await (await fixture.chat(key, { message: `Remember ${words.chat}` })).json(),
    );
    const importedConversation = randomUUID();
    const imported = await call(
      'POST',
      `/v1/conversations/${importedConversation}/messages/import`,
      key,
      {
        messages: [
          {
            role: 'user',
            content: `Old note ${words.imported}`,
            createdAt: '2024-01-02T10:00:00Z',
          },
        ],
      },
    );
    expect(imported.status).toBe(200);
    const mission = MissionResponse.parse(
      (
        await call('POST', '/v1/missions', key, {
          objective: `Research ${words.mission}`,
          tasks: [{ title: 'Look it up', brief: `Find ${words.mission}` }],
        })
      ).body,
    ).mission;
    // A pending approval: the model asks to delete A's file, and A has not decided.
    fixture.fake.onChat((request) =>
      isTurnRequest(request) &&
      sentMessages(request).some((message) => message.content.includes(words.approval)) &&
      !sentMessages(request).some((message) => message.role === 'tool')
        ? { toolCalls: [{ name: 'memory_delete', arguments: { path: filePath } }] }
        : {},
    );
    const paused = ChatResponse.parse(
      await (await fixture.chat(key, { message: `Delete ${filePath} ${words.approval}` })).json(),
    );
    fixture.fake.onChat(() => ({}));
    const approval = paused.approval?.id;
    if (!approval) throw new Error('the turn did not pause for approval');
    // A month ahead: it must not fire, and change, while the test runs.
    const schedule = ScheduleResponse.parse(
      (
        await call('POST', '/v1/schedules', key, {
          kind: 'once',
          at: new Date(Date.now() + 30 * 24 * 3_600_000).toISOString(),
          name: `Errand ${words.schedule}`,
          action: { type: 'remind', text: `Fetch ${words.schedule}` },
        })
      ).body,
    ).schedule;
    const second = CreateApiKeyResponse.parse(
      (await call('POST', '/v1/keys', key, { name: words.keyName })).body,
    );
    const keys = ListApiKeysResponse.parse((await call('GET', '/v1/keys', key)).body).keys;
    const messages = MemoryMessagesListResponse.parse(
      (await call('GET', `/v1/conversations/${chat.conversationId}/messages`, key)).body,
    ).messages;

    const ids = {
      user: created.user.id,
      fact: fact.id,
      document: document.id,
      conversation: chat.conversationId,
      importedConversation,
      run: chat.runId,
      turn: chat.turnId,
      mission: mission.id,
      approval,
      schedule: schedule.id,
      keys: keys.map((each) => each.id),
      messages: messages.map((message) => message.id),
    };
    return {
      key,
      ids,
      filePath,
      schedule,
      secrets: [
        ...Object.values(words),
        filePath,
        key,
        second.apiKey,
        ...Object.values(ids).flat(),
      ],
    };
  }

  beforeAll(async () => {
    // The install has a Telegram bot (a stand-in of its API): without one, a link code is
    // rightly 503, and the route would go unfuzzed past that answer.
    telegram = await startTelegramStandIn();
    fixture = await startStackFixture({
      TELEGRAM_BOT_TOKEN: `7000001:${randomBytes(16).toString('hex')}`,
      TELEGRAM_API_ROOT: telegram.url,
      BODY_LIMIT_BYTES: String(BODY_LIMIT_BYTES),
      IMPORT_BODY_LIMIT_BYTES: String(1_024 * 1_024),
      // Limits would answer 429 before the input is ever read.
      RATE_LIMIT_PER_MINUTE: '0',
      CHAT_RATE_LIMIT_PER_MINUTE: '0',
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: '0',
    });
    url = fixture.stack.gatewayUrl;
    owner = await seedOwner('alice');
    bobKey = (await fixture.createUser('bob')).apiKey;
  });

  afterAll(async () => {
    await fixture?.close();
    await telegram?.close();
  });

  const contextFor = (overrides: Partial<FuzzContext>): FuzzContext => ({
    uuid: fc.uuid(),
    userKey: bobKey,
    adminKey: fixture.adminKey,
    bodyLimitBytes: BODY_LIMIT_BYTES,
    isStrict: false,
    ...overrides,
  });

  it('fuzzes every endpoint the gateway serves', async () => {
    const served = OperationsByPath.parse(await (await fetch(`${url}/v1/openapi.json`)).json());
    const documented = Object.entries(served.paths).flatMap(([path, operations]) =>
      Object.keys(operations).map((method) => `${method.toUpperCase()} ${path}`),
    );

    expect(ENDPOINTS.map(endpointName).sort()).toEqual(documented.sort());
  });

  it.each(
    ENDPOINTS.map((route) => [endpointName(route), route] as const),
  )('survives anything sent to %s', async (name, route) => {
    // Random ids, and now and then one of A's; never A's for the admin, who may revoke any
    // key.
    const isAdmin = route.auth === 'admin';
    const uuid = isAdmin
      ? fc.uuid()
      : fc.oneof(
          { weight: 4, arbitrary: fc.uuid() },
          { weight: 1, arbitrary: fc.constantFrom(...Object.values(owner.ids).flat()) },
        );
    await fc.assert(
      fc.asyncProperty(requestFor(route, contextFor({ uuid })), async (request) => {
        await check(request, isAdmin);
      }),
      { seed: SEED, numRuns: RUNS_BY_ROUTE[name] ?? RUNS_PER_ROUTE },
    );
    await expectStackUp();
  });

  it.each(
    ENDPOINTS.filter((route) => route.body !== undefined).map(
      (route) => [endpointName(route), route] as const,
    ),
  )('survives deep, long and wide values inside a body sent to %s', async (name, route) => {
    await fc.assert(
      fc.asyncProperty(filledRequestFor(route, contextFor({})), async (request) => {
        await check(request, route.auth === 'admin');
      }),
      { seed: SEED, numRuns: Math.min(FILLED_RUNS_PER_ROUTE, RUNS_BY_ROUTE[name] ?? Infinity) },
    );
    await expectStackUp();
  });

  it.each(
    ENDPOINTS.filter((route) => route.auth === 'user').map(
      (route) => [endpointName(route), route] as const,
    ),
  )('shows B none of A, however %s names A’s ids', async (_name, route) => {
    const ids = Object.values(owner.ids).flat();
    // A mix of A's ids in each request, then each one of them in every place: sampling alone
    // leaves most of A's ids untried on a route, since the fixed seed picks the same few on each.
    const rounds = [
      { uuid: fc.constantFrom(...ids), numRuns: CROSS_USER_RUNS_PER_ROUTE },
      ...ids.map((id) => ({ uuid: fc.constant(id), numRuns: 1 })),
    ];
    for (const { uuid, numRuns } of rounds) {
      await fc.assert(
        fc.asyncProperty(
          requestFor(route, contextFor({ uuid, isStrict: true })),
          async (request) => {
            await check(request);
          },
        ),
        { seed: SEED, numRuns },
      );
    }
  });

  it('answers B 404 for each of A’s things, as for one that does not exist', async () => {
    const { ids } = owner;
    const attempts: [string, string, unknown?][] = [
      ['GET', `/v1/memory/facts/${ids.fact}`],
      ['PATCH', `/v1/memory/facts/${ids.fact}`, { content: 'mine now' }],
      ['DELETE', `/v1/memory/facts/${ids.fact}`],
      ['GET', `/v1/memory/documents/${ids.document}`],
      ['DELETE', `/v1/memory/documents/${ids.document}`],
      ['GET', `/v1/conversations/${ids.conversation}/messages`],
      [
        'POST',
        `/v1/conversations/${ids.conversation}/messages/import`,
        { messages: [{ role: 'user', content: 'planted', createdAt: '2024-01-02T10:00:00Z' }] },
      ],
      ['GET', `/v1/runs/${ids.run}`],
      ['POST', `/v1/turns/${ids.turn}/cancel`],
      ['GET', `/v1/missions/${ids.mission}`],
      ['POST', `/v1/missions/${ids.mission}/cancel`],
      ['POST', `/v1/approvals/${ids.approval}`, { decision: 'approve' }],
      ['GET', `/v1/schedules/${ids.schedule}`],
      ['PATCH', `/v1/schedules/${ids.schedule}`, { status: 'paused' }],
      ['DELETE', `/v1/schedules/${ids.schedule}`],
      ['POST', `/v1/schedules/${ids.schedule}/snooze`, { minutes: 5 }],
      ['GET', `/v1/schedules/${ids.schedule}/runs`],
      ...ids.keys.map((id): [string, string] => ['DELETE', `/v1/keys/${id}`]),
    ];
    for (const [method, path, body] of attempts) {
      const answer = await call(method, path, bobKey, body);
      expect(answer.status, `${method} ${path}`).toBe(404);
    }
    const chat = await fixture.chat(bobKey, { message: 'hi', conversationId: ids.conversation });
    expect(chat.status).toBe(404);
  });

  it('leaves A’s data as A left it', async () => {
    const { ids, key } = owner;
    const fact = MemoryFactsGetResponse.parse(
      (await call('GET', `/v1/memory/facts/${ids.fact}`, key)).body,
    );
    expect(fact.fact).toMatchObject({ validTo: null, supersededBy: null });
    const file = MemoryFilesReadResponse.parse(
      (await call('GET', `/v1/memory/files/content?path=${owner.filePath}`, key)).body,
    );
    expect(file.file.version).toBe(1);
    expect((await call('GET', `/v1/memory/documents/${ids.document}`, key)).status).toBe(200);
    // The mission's report may have joined the conversation since; nothing of B's may have.
    const messages = MemoryMessagesListResponse.parse(
      (await call('GET', `/v1/conversations/${ids.conversation}/messages?limit=200`, key)).body,
    ).messages;
    expect(messages.map((message) => message.id)).toEqual(expect.arrayContaining(ids.messages));
    for (const message of messages.filter((each) => each.role === 'user')) {
      expect(owner.secrets.some((secret) => message.content.includes(secret))).toBe(true);
    }
    const mission = MissionResponse.parse(
      (await call('GET', `/v1/missions/${ids.mission}`, key)).body,
    ).mission;
    expect(mission.status).not.toBe('cancelled');
    const approvals = ApprovalsListResponse.parse(
      (await call('GET', '/v1/approvals', key)).body,
    ).approvals;
    expect(approvals.find((approval) => approval.id === ids.approval)?.status).toBe('pending');
    const schedule = ScheduleResponse.parse(
      (await call('GET', `/v1/schedules/${ids.schedule}`, key)).body,
    ).schedule;
    expect(schedule).toEqual(owner.schedule);
    const keys = ListApiKeysResponse.parse((await call('GET', '/v1/keys', key)).body).keys;
    expect(keys.map((each) => each.revokedAt)).toEqual(ids.keys.map(() => null));
  });
});
