import { ChatResponse, MissionResponse, RunsGetResponse, TurnEvent } from '@jarvis/contracts';
import {
  connectSse,
  type FakeLlmRequest,
  isTurnRequest,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, onTurn, toolResults, waitForToolsOffered } from './tool-turns';

// run_code through the whole stack, in a real bubblewrap box (bwrap and /usr/bin/python3 with
// matplotlib on the machine, as the tools image has them): the fake model has Python draw a
// chart into /workspace; the PNG is kept in the conversation's workspace, listed and served by
// the API as a download, and named in the run's step and the chat's tool_finished event; the
// next turn's code finds it there; a mission's task writes to the mission's workspace; and
// APPROVAL_TOOLS=run_code makes the call wait for the user.

const CHART = `import matplotlib.pyplot as plt
plt.plot([1, 2, 3, 4], [12, 30, 21, 44])
plt.title('Rainfall in Lisbon')
plt.savefig('/workspace/chart.png')
print('saved')`;
const FARES = 'line,fare\n28,3.10\n15,2.10\n';
// A PNG file's first eight bytes.
const PNG_SIGNATURE = '89504e470d0a1a0a';

type RunCodeResult = {
  stdout: string;
  stderr: string;
  exitCode: number;
  limit?: string;
  files?: { path: string; size: number; mediaType: string; url?: string }[];
};

describe('run_code and the workspace', () => {
  let fixture: StackFixture;
  let key: string;
  let otherKey: string;
  let conversationId: string;
  let chartSize: number;

  const url = (path: string) => `${fixture.stack.gatewayUrl}${path}`;
  const get = (path: string, apiKey = key) =>
    fetch(url(path), { headers: { authorization: `Bearer ${apiKey}` } });
  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(url(path), {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const filesOf = async (kind: 'conversation' | 'mission', id: string) => {
    const response = await get(`/v1/workspaces/${kind}/${id}/files`);
    expect(response.status).toBe(200);
    return (await response.json()) as {
      files: { path: string; size: number; mediaType: string; updatedAt: string }[];
      usedBytes: number;
      quotaBytes: number;
    };
  };
  const lastRunCodeResult = (): RunCodeResult => JSON.parse(toolResults(fixture).at(-1) ?? '{}');
  const runCodeStep = async (runId: string) => {
    const { run } = RunsGetResponse.parse((await api('GET', `/v1/runs/${runId}`)).body);
    return run.steps.find((step) => step.kind === 'tool' && step.name === 'run_code');
  };

  beforeAll(async () => {
    fixture = await startStackFixture();
    key = (await fixture.createUser('rosa')).apiKey;
    otherKey = (await fixture.createUser('tomas')).apiKey;
    await waitForToolsOffered(fixture, key, ['run_code']);
  }, 120_000);

  afterAll(async () => {
    await fixture?.close();
  });

  it('draws a chart with matplotlib: the PNG is kept, listed, served as a download and named in the run', async () => {
    onTurn(fixture, (results) =>
      results === 0
        ? { toolCalls: [{ name: 'run_code', arguments: { language: 'python', code: CHART } }] }
        : { content: 'Here is the chart.' },
    );

    const stream = await connectSse(url('/v1/chat'), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'text/event-stream',
      },
      body: JSON.stringify({ message: 'Draw me a chart of the rainfall.' }),
    });
    const events = await stream.until('done', 90_000);
    stream.close();
    const turn = events.slice(1).map((event) => TurnEvent.parse(JSON.parse(event.data)));
    const done = turn.at(-1);
    if (done?.type !== 'done') throw new Error(`the turn did not answer: ${JSON.stringify(done)}`);
    expect(done.reply.content).toBe('Here is the chart.');
    conversationId = done.conversationId;
    const chartUrl = `/v1/workspaces/conversation/${conversationId}/files/chart.png`;

    // What the model was given.
    const result = lastRunCodeResult();
    expect(result).toMatchObject({ stdout: 'saved\n', exitCode: 0 });
    expect(result.limit).toBeUndefined();
    expect(result.files).toEqual([
      { path: 'chart.png', size: expect.any(Number), mediaType: 'image/png', url: chartUrl },
    ]);
    chartSize = result.files?.[0]?.size ?? 0;
    expect(chartSize).toBeGreaterThan(1_000);

    // The workspace lists it.
    const listed = await filesOf('conversation', conversationId);
    expect(listed.files).toEqual([
      { path: 'chart.png', size: chartSize, mediaType: 'image/png', updatedAt: expect.any(String) },
    ]);
    expect(listed.usedBytes).toBe(chartSize);
    expect(listed.quotaBytes).toBe(500 * 1024 * 1024);

    // It downloads as a PNG, as an attachment the browser may not sniff or run.
    const download = await get(chartUrl);
    expect(download.status).toBe(200);
    expect(download.headers.get('content-type')).toBe('image/png');
    expect(download.headers.get('content-disposition')).toBe(
      "attachment; filename*=UTF-8''chart.png",
    );
    expect(download.headers.get('x-content-type-options')).toBe('nosniff');
    expect(download.headers.get('content-security-policy')).toBe("sandbox; default-src 'none'");
    expect(download.headers.get('cache-control')).toBe('private, no-store');
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes.length).toBe(chartSize);
    expect(bytes.subarray(0, 8).toString('hex')).toBe(PNG_SIGNATURE);
    // Another user finds nothing there.
    expect((await get(chartUrl, otherKey)).status).toBe(404);

    // The run's step and the chat's tool_finished event name the file, with its URL.
    const chartFile = { path: 'chart.png', size: chartSize, mediaType: 'image/png', url: chartUrl };
    const step = await runCodeStep(done.runId);
    expect(step).toMatchObject({ status: 'ok', output: { files: [chartFile] } });
    const finished = turn.find((event) => event.type === 'tool_finished');
    expect(finished).toMatchObject({ name: 'run_code', isError: false, files: [chartFile] });
  }, 120_000);

  it("runs the next turn's code on the files the last one kept", async () => {
    const code = `data = open('/workspace/chart.png', 'rb').read()
print(len(data), data[:8].hex())`;
    onTurn(fixture, (results) =>
      results === 0
        ? { toolCalls: [{ name: 'run_code', arguments: { language: 'python', code } }] }
        : { content: 'The chart is still there.' },
    );

    const reply = await chat(fixture, key, 'Is the chart still there?');

    expect(reply.conversationId).toBe(conversationId);
    const result = lastRunCodeResult();
    expect(result).toMatchObject({ stdout: `${chartSize} ${PNG_SIGNATURE}\n`, exitCode: 0 });
    // Reading a file changes nothing, so the run names no file.
    expect(result.files ?? []).toEqual([]);
  }, 90_000);

  it("keeps a mission task's files in the mission's workspace", async () => {
    const code = `with open('/workspace/fares.csv', 'w') as out:
    out.write(${JSON.stringify(FARES)})
print('written')`;
    const system = (request: FakeLlmRequest) => sentMessages(request)[0]?.content ?? '';
    fixture.fake.onChat((request) => {
      if (system(request).includes('Write the report of a mission')) {
        return { content: 'The fares are in fares.csv.' };
      }
      if (!system(request).includes('one task of a mission')) {
        return { content: '{"operations": []}' };
      }
      const hasResult = sentMessages(request).some((message) => message.role === 'tool');
      return hasResult
        ? { content: 'Wrote fares.csv.' }
        : { toolCalls: [{ name: 'run_code', arguments: { language: 'python', code } }] };
    });

    const created = await api('POST', '/v1/missions', {
      objective: 'Tabulate the tram fares',
      tasks: [{ title: 'Tabulate', brief: 'Write the fares to a CSV.', tools: ['run_code'] }],
    });
    expect(created.status).toBe(202);
    const { mission } = MissionResponse.parse(created.body);
    const done = await waitFor(
      async () => {
        const { body } = await api('GET', `/v1/missions/${mission.id}`);
        const current = MissionResponse.parse(body).mission;
        return current.reportMessageId ? current : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200, what: 'the mission to end' },
    );

    expect(done.status).toBe('completed');
    const listed = await filesOf('mission', mission.id);
    expect(listed.files).toEqual([
      {
        path: 'fares.csv',
        size: FARES.length,
        mediaType: 'text/csv',
        updatedAt: expect.any(String),
      },
    ]);
    const faresUrl = `/v1/workspaces/mission/${mission.id}/files/fares.csv`;
    const download = await get(faresUrl);
    expect(download.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(await download.text()).toBe(FARES);
    // Kept for the mission, not in the conversation the mission reports to.
    const conversation = await filesOf('conversation', done.conversationId);
    expect(conversation.files.map((file) => file.path)).not.toContain('fares.csv');
    const step = await runCodeStep(done.tasks[0]?.runId ?? '');
    expect(step).toMatchObject({
      output: { files: [{ path: 'fares.csv', mediaType: 'text/csv', url: faresUrl }] },
    });
  }, 90_000);

  // Last: it restarts the orchestrator with run_code among the tools that wait for approval,
  // which also takes run_code away from mission tasks (they never use such a tool). A restart of
  // one service costs seconds; a second stack would cost six services' start.
  it('waits for approval before running code when APPROVAL_TOOLS names run_code', async () => {
    await fixture.stack.stopService('orchestrator');
    await fixture.stack.startService('orchestrator', { APPROVAL_TOOLS: 'run_code' });
    await waitForToolsOffered(fixture, key, ['run_code']);
    const code = 'echo approved > /workspace/approved.txt && echo done';
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const result = sentMessages(request).find((message) => message.role === 'tool');
      if (!result) {
        return { toolCalls: [{ name: 'run_code', arguments: { language: 'shell', code } }] };
      }
      return { content: 'Ran it.' };
    });

    const response = await fixture.chat(key, { message: 'Write approved.txt with a shell.' });
    expect(response.status).toBe(200);
    const paused = ChatResponse.parse(await response.json());

    expect(paused.approval).toMatchObject({
      toolName: 'run_code',
      arguments: { language: 'shell', code },
    });
    expect((await api('GET', `/v1/runs/${paused.runId}`)).body.run).toMatchObject({
      status: 'waiting_approval',
    });
    const before = await filesOf('conversation', conversationId);
    expect(before.files.map((file) => file.path)).toEqual(['chart.png']);

    const decided = await api('POST', `/v1/approvals/${paused.approval?.id}`, {
      decision: 'approve',
    });

    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({
      decided: { status: 'approved' },
      reply: { content: 'Ran it.' },
    });
    expect(lastRunCodeResult()).toMatchObject({ stdout: 'done\n', exitCode: 0 });
    const after = await filesOf('conversation', conversationId);
    expect(after.files.map((file) => file.path).sort()).toEqual(['approved.txt', 'chart.png']);
    const text = await get(`/v1/workspaces/conversation/${conversationId}/files/approved.txt`);
    expect(await text.text()).toBe('approved\n');
  }, 120_000);
});
