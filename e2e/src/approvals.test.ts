import { ChatResponse } from '@jarvis/contracts';
import {
  isTurnRequest,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Deleting a memory file is a risky tool (APPROVAL_TOOLS): the run pauses until its user
// decides, across restarts, or until the approval expires.
const TTL_MS = 8_000;

describe('approvals', () => {
  let fixture: StackFixture;
  let key: string;
  let userId: string;
  let db: pg.Client;

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  const writeNote = (path: string) =>
    call('PUT', '/v1/memory/files/content', { path, content: 'old things' });
  const noteExists = async (path: string) =>
    (await call('GET', `/v1/memory/files/content?path=${path}`)).status === 200;

  // Asks to delete the note; then answers from what the tool call came back with.
  const askToDelete = async (path: string) => {
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const result = sentMessages(request).find((message) => message.role === 'tool');
      if (!result) return { toolCalls: [{ name: 'memory_delete', arguments: { path } }] };
      if (result.content.includes('denied')) return { content: 'OK, I left it.' };
      if (result.content.includes('in time')) return { content: 'No answer, so I kept it.' };
      return { content: 'Deleted.' };
    });
    const response = await fixture.chat(key, { message: `Delete ${path}` });
    expect(response.status).toBe(200);
    return ChatResponse.parse(await response.json());
  };

  const lastReply = async () => {
    const { rows } = await db.query<{ content: string }>(
      `SELECT content FROM memory.messages WHERE user_id = $1 AND role = 'assistant'
       ORDER BY seq DESC LIMIT 1`,
      [userId],
    );
    return rows[0]?.content;
  };

  beforeAll(async () => {
    fixture = await startStackFixture({
      APPROVAL_TTL_MS: String(TTL_MS),
      APPROVAL_SWEEP_MS: '250',
    });
    const user = await fixture.createUser('amos');
    key = user.apiKey;
    userId = user.user.id;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
  });

  it('pauses on a risky call, and runs it once approved', async () => {
    await writeNote('notes/a.md');

    const paused = await askToDelete('notes/a.md');

    expect(paused.reply.content).toMatch(/I'd like to run memory_delete .* needs your approval/);
    expect(paused.approval).toMatchObject({
      toolName: 'memory_delete',
      arguments: { path: 'notes/a.md' },
    });
    expect(await noteExists('notes/a.md')).toBe(true);
    const pending = await call('GET', '/v1/approvals');
    expect(pending.body.approvals).toEqual([
      expect.objectContaining({ id: paused.approval?.id, status: 'pending' }),
    ]);
    expect((await call('GET', `/v1/runs/${paused.runId}`)).body.run).toMatchObject({
      status: 'waiting_approval',
    });

    const decided = await call('POST', `/v1/approvals/${paused.approval?.id}`, {
      decision: 'approve',
    });

    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({
      decided: { status: 'approved' },
      reply: { content: 'Deleted.' },
      runId: paused.runId,
    });
    expect(await noteExists('notes/a.md')).toBe(false);
    expect((await call('GET', `/v1/runs/${paused.runId}`)).body.run).toMatchObject({
      status: 'completed',
    });
    const again = await call('POST', `/v1/approvals/${paused.approval?.id}`, {
      decision: 'deny',
    });
    expect(again.status).toBe(409);
  });

  it('tells the model a denied call was denied, and does not run it', async () => {
    await writeNote('notes/b.md');
    const paused = await askToDelete('notes/b.md');

    const decided = await call('POST', `/v1/approvals/${paused.approval?.id}`, {
      decision: 'deny',
    });

    expect(decided.body).toMatchObject({
      decided: { status: 'denied' },
      reply: { content: 'OK, I left it.' },
    });
    expect(await noteExists('notes/b.md')).toBe(true);
  });

  it('answers a decision with the approval decided and, when the run pauses again, the next one', async () => {
    await writeNote('notes/d.md');
    await writeNote('notes/e.md');
    // One risky call after the other: the second comes once the first has run.
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool');
      if (results.length < 2) {
        const path = results.length === 0 ? 'notes/d.md' : 'notes/e.md';
        return { toolCalls: [{ name: 'memory_delete', arguments: { path } }] };
      }
      return { content: 'Both deleted.' };
    });
    const response = await fixture.chat(key, { message: 'Delete notes/d.md and notes/e.md' });
    const paused = ChatResponse.parse(await response.json());

    const first = await call('POST', `/v1/approvals/${paused.approval?.id}`, {
      decision: 'approve',
    });

    expect(first.body).toMatchObject({
      decided: { id: paused.approval?.id, status: 'approved', arguments: { path: 'notes/d.md' } },
      approval: { toolName: 'memory_delete', arguments: { path: 'notes/e.md' } },
      runId: paused.runId,
    });
    const next = first.body.approval as { id: string };
    expect(next.id).not.toBe(paused.approval?.id);
    const second = await call('POST', `/v1/approvals/${next.id}`, { decision: 'approve' });
    expect(second.body).toMatchObject({
      decided: { id: next.id, status: 'approved' },
      reply: { content: 'Both deleted.' },
    });
    expect(second.body).not.toHaveProperty('approval');
    expect(await noteExists('notes/d.md')).toBe(false);
    expect(await noteExists('notes/e.md')).toBe(false);
  });

  it('keeps a waiting approval across an orchestrator restart', async () => {
    await writeNote('notes/c.md');
    const paused = await askToDelete('notes/c.md');

    await fixture.stack.stopService('orchestrator');
    await fixture.stack.startService('orchestrator');
    const decided = await call('POST', `/v1/approvals/${paused.approval?.id}`, {
      decision: 'approve',
    });

    expect(decided.body).toMatchObject({ reply: { content: 'Deleted.' } });
    expect(await noteExists('notes/c.md')).toBe(false);
  });

  it('lets the run go on without the call once the approval expires', async () => {
    await writeNote('notes/d.md');
    const paused = await askToDelete('notes/d.md');

    await waitFor(async () => (await lastReply()) === 'No answer, so I kept it.', {
      timeoutMs: TTL_MS + 10_000,
      what: 'the reply after the approval expired',
    });

    expect(await noteExists('notes/d.md')).toBe(true);
    const expired = await call('GET', '/v1/approvals?status=expired');
    expect(expired.body.approvals).toEqual([
      expect.objectContaining({ id: paused.approval?.id, status: 'expired' }),
    ]);
    const late = await call('POST', `/v1/approvals/${paused.approval?.id}`, {
      decision: 'approve',
    });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: { message: 'the approval was already expired' } });
  });

  it('answers 404 for an unknown approval and 400 for a bad decision', async () => {
    const unknown = await call('POST', '/v1/approvals/7d9c5e0e-4a7b-4a53-9d7e-2f1a8c2b9e11', {
      decision: 'approve',
    });
    const bad = await call('POST', '/v1/approvals/7d9c5e0e-4a7b-4a53-9d7e-2f1a8c2b9e11', {
      decision: 'maybe',
    });

    expect(unknown.status).toBe(404);
    expect(bad.status).toBe(400);
  });
});
