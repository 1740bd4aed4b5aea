import {
  ChatResponse,
  MemoryConversationsListResponse,
  MemoryMessagesListResponse,
  MissionResponse,
  RunsGetResponse,
  TurnEvent,
  UserEvent,
} from '@jarvis/contracts';
import {
  connectSse,
  type FakeReply,
  isTurnRequest,
  type SseConnection,
  type SseEvent,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

// The chat API through the whole stack: a turn streamed as server-sent events, cancelled mid-way,
// read back as history, and the user's live event stream of missions and approvals.
describe('the chat API', () => {
  let fixture: StackFixture;
  let key: string;
  let otherKey: string;
  let db: pg.Client;
  const connections: SseConnection[] = [];

  const url = (path: string) => `${fixture.stack.gatewayUrl}${path}`;
  const api = async (method: string, path: string, body?: unknown, apiKey = key) => {
    const response = await fetch(url(path), {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const track = (connection: SseConnection) => {
    connections.push(connection);
    return connection;
  };
  const streamChat = async (message: string) =>
    track(
      await connectSse(url('/v1/chat'), {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          accept: 'text/event-stream',
        },
        body: JSON.stringify({ message }),
      }),
    );
  const listen = async (lastEventId?: string) =>
    track(
      await connectSse(url('/v1/events'), {
        headers: {
          authorization: `Bearer ${key}`,
          accept: 'text/event-stream',
          ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
        },
      }),
    );
  const turnEvent = (event: SseEvent) => TurnEvent.parse(JSON.parse(event.data));
  const userEvent = (event: SseEvent) => UserEvent.parse(JSON.parse(event.data));

  // Turn requests answer by how many tool results the model has seen; background requests
  // (fact extraction), by a plain answer; a mission's tasks and report as given.
  const onTurn = (reply: (toolResults: number) => FakeReply) =>
    fixture.fake.onChat((request) => {
      const system = sentMessages(request)[0]?.content ?? '';
      if (system.includes('one task of a mission')) return { content: 'Task result.' };
      if (system.includes('Write the report of a mission')) return { content: 'The report.' };
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool').length;
      return reply(results);
    });

  beforeAll(async () => {
    fixture = await startStackFixture();
    key = (await fixture.createUser('ada')).apiKey;
    otherKey = (await fixture.createUser('eve')).apiKey;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
  });

  afterEach(() => {
    for (const connection of connections.splice(0)) connection.close();
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
  });

  // First in the file: with no earlier turn, no background request can take the hold.
  it('cancels a running turn: it ends cancelled, with one note as its reply', async () => {
    onTurn(() => ({ content: 'This answer never arrives.' }));
    const gate = fixture.fake.hold();
    try {
      const stream = await streamChat('Write me a very long essay.');
      const accepted = JSON.parse((await stream.next()).data) as { turnId: string; runId: string };
      expect(isTurnRequest(await gate.reached)).toBe(true);

      const cancelled = await api('POST', `/v1/turns/${accepted.turnId}/cancel`);
      const events = await stream.until('failed');

      expect(cancelled).toEqual({
        status: 202,
        body: { turnId: accepted.turnId, runId: accepted.runId, status: 'cancelling' },
      });
      expect(turnEvent(events.at(-1) as SseEvent)).toMatchObject({
        type: 'failed',
        turnId: accepted.turnId,
        error: { code: 'cancelled' },
      });
      await expect(stream.next(5_000)).rejects.toThrow(/ended/);
      const { rows } = await db.query<{ content: string }>(
        `SELECT content FROM memory.messages m JOIN orchestrator.runs r
           ON r.conversation_id = m.conversation_id
         WHERE r.id = $1 AND m.role = 'assistant'`,
        [accepted.runId],
      );
      expect(rows).toEqual([{ content: 'Stopped at your request.' }]);
      const run = RunsGetResponse.parse((await api('GET', `/v1/runs/${accepted.runId}`)).body).run;
      expect(run).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
      expect(run.steps.at(-1)).toMatchObject({ kind: 'guardrail', name: 'cancelled' });

      expect((await api('POST', `/v1/turns/${accepted.turnId}/cancel`)).status).toBe(409);
      const stranger = await api('POST', `/v1/turns/${accepted.turnId}/cancel`, {}, otherKey);
      expect(stranger.status).toBe(404);
    } finally {
      gate.release();
    }
  });

  it('streams a turn: accepted, tool events, the text as written, then done', async () => {
    onTurn((results) =>
      results === 0
        ? { toolCalls: [{ name: 'memory_ls', arguments: {} }] }
        : { content: 'You have no files yet, so nothing to list.' },
    );

    const stream = await streamChat('What files do I have?');
    const events = await stream.until('done');

    expect(stream.response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(stream.response.headers.get('x-accel-buffering')).toBe('no');
    const types = events.map((event) => event.event);
    expect(types.filter((type, index) => type !== types[index - 1])).toEqual([
      'accepted',
      'tool_started',
      'tool_finished',
      'delta',
      'done',
    ]);
    const accepted = JSON.parse(events[0]?.data ?? '{}') as { turnId: string };
    const turn = events.slice(1).map(turnEvent);
    expect(turn.every((event) => event.turnId === accepted.turnId)).toBe(true);
    const text = turn.flatMap((event) => (event.type === 'delta' ? [event.text] : [])).join('');
    const done = turn.at(-1);
    expect(done).toMatchObject({
      type: 'done',
      reply: { content: 'You have no files yet, so nothing to list.' },
      usage: { inputTokens: expect.any(Number), outputTokens: expect.any(Number) },
    });
    expect(text).toBe('You have no files yet, so nothing to list.');
    expect(turn[0]).toMatchObject({ type: 'tool_started', name: 'memory_ls' });
    await expect(stream.next(5_000)).rejects.toThrow(/ended/);
  });

  it('answers JSON as before without the Accept header, now with the turn id', async () => {
    onTurn(() => ({ content: 'Plain answer.' }));

    const response = await fixture.chat(key, { message: 'Hello?' });

    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(ChatResponse.parse(await response.json())).toMatchObject({
      turnId: expect.any(String),
      reply: { role: 'assistant', content: 'Plain answer.' },
    });
  });

  it('reads the history back newest first, page by page, and only the own user', async () => {
    const list = MemoryConversationsListResponse.parse(
      (await api('GET', '/v1/conversations')).body,
    );
    const conversationId = list.defaultConversationId ?? '';
    expect(list.conversations[0]).toMatchObject({
      id: conversationId,
      isDefault: true,
      title: 'Write me a very long essay.',
    });

    const first = MemoryMessagesListResponse.parse(
      (await api('GET', `/v1/conversations/${conversationId}/messages?limit=4`)).body,
    );
    const rest = MemoryMessagesListResponse.parse(
      (
        await api(
          'GET',
          `/v1/conversations/${conversationId}/messages?limit=4&before=${first.nextBefore}`,
        )
      ).body,
    );

    expect([...first.messages, ...rest.messages].map((message) => message.content)).toEqual([
      'Plain answer.',
      'Hello?',
      'You have no files yet, so nothing to list.',
      'What files do I have?',
      'Stopped at your request.',
      'Write me a very long essay.',
    ]);
    expect(rest.nextBefore).toBeUndefined();
    const stranger = await api(
      'GET',
      `/v1/conversations/${conversationId}/messages`,
      undefined,
      otherKey,
    );
    expect(stranger.status).toBe(404);
  });

  it('streams mission updates and approval requests, and resumes after Last-Event-ID', async () => {
    onTurn((results) =>
      results === 0
        ? { toolCalls: [{ name: 'memory_delete', arguments: { path: 'notes/old.md' } }] }
        : { content: 'Deleted.' },
    );
    const live = await listen();

    const created = await api('POST', '/v1/missions', {
      objective: 'Compare two teas',
      tasks: [{ title: 'Taste', brief: 'Taste green and black tea.' }],
    });
    const { mission } = MissionResponse.parse(created.body);
    const missionEvents = [await live.next(), await live.next(), await live.next()];
    const paused = ChatResponse.parse(
      await (await fixture.chat(key, { message: 'Delete notes/old.md' })).json(),
    );
    const approvalEvent = await live.next();

    expect(missionEvents.map(userEvent)).toMatchObject([
      { mission: { id: mission.id, status: 'running' }, change: 'started' },
      { change: 'task_finished', task: { title: 'Taste', status: 'completed' } },
      { mission: { status: 'completed' }, change: 'ended', reportMessageId: expect.any(String) },
    ]);
    const ended = await waitFor(async () => {
      const { body } = await api('GET', `/v1/missions/${mission.id}`);
      return MissionResponse.parse(body).mission.reportMessageId ?? undefined;
    });
    expect(userEvent(missionEvents[2] as SseEvent)).toMatchObject({ reportMessageId: ended });
    expect(userEvent(approvalEvent)).toMatchObject({
      type: 'approval_requested',
      approval: { id: paused.approval?.id, toolName: 'memory_delete', status: 'pending' },
    });

    // Away: another approval is asked for meanwhile; back, from the last event seen.
    live.close();
    const missed = ChatResponse.parse(
      await (await fixture.chat(key, { message: 'Delete notes/old.md again' })).json(),
    );
    const back = await listen(approvalEvent.id);
    await api('POST', '/v1/missions', {
      objective: 'One more',
      tasks: [{ title: 'Check', brief: 'Check it.' }],
    });
    const resumed = [await back.next(), await back.next()];

    expect(resumed.map(userEvent)).toMatchObject([
      { type: 'approval_requested', approval: { id: missed.approval?.id } },
      { type: 'mission_updated', change: 'started', mission: { objective: 'One more' } },
    ]);
    // Nothing lost, nothing twice: the ids go on from the last one seen, one by one.
    expect(resumed.map((event) => Number(event.id))).toEqual([
      Number(approvalEvent.id) + 1,
      Number(approvalEvent.id) + 2,
    ]);
  });
});
