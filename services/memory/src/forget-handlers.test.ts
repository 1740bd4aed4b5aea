import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { sendRaw } from '@jarvis/bus/testing';
import {
  memoryAppend,
  memoryFactsGet,
  memoryFactsRemember,
  memoryFilesRead,
  memoryFilesWrite,
  memoryForgetApply,
  memoryForgetPreview,
  memoryRecall,
  memorySearch,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFactHandlers } from './facts-handlers';
import { registerFileHandlers } from './files-handlers';
import { registerForgetHandlers } from './forget-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;

beforeAll(async () => {
  memory = await startMemoryFixture('memory-forget', [
    registerForgetHandlers,
    registerFactHandlers,
    registerFileHandlers,
  ]);
  ({ db, clientBus } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

async function say(userId: string, role: 'user' | 'assistant', content: string) {
  return (await clientBus.request(memoryAppend, { userId, role, content })).message;
}

async function preview(userId: string, query: string) {
  return (await clientBus.request(memoryForgetPreview, { userId, query })).matches;
}

async function forget(userId: string, items: { kind: 'fact' | 'message' | 'file'; id: string }[]) {
  return (await clientBus.request(memoryForgetApply, { userId, items })).forgotten;
}

async function searchIds(userId: string, query: string): Promise<string[]> {
  const { results } = await clientBus.request(memorySearch, { userId, query, limit: 50 });
  return results.map((result) => result.id);
}

async function itemCount(userId: string): Promise<number> {
  const { rows } = await db.pool.query<{ items: string }>(
    'SELECT items FROM memory.item_counts WHERE user_id = $1',
    [userId],
  );
  return Number(rows[0]?.items ?? 0);
}

async function messageState(id: string) {
  const { rows } = await db.pool.query<{ is_forgotten: boolean; embeddings: number }>(
    `SELECT m.forgotten_at IS NOT NULL AS is_forgotten,
       (SELECT count(*)::int FROM memory.embeddings e WHERE e.item_id = m.id) AS embeddings
     FROM memory.messages m WHERE m.id = $1`,
    [id],
  );
  return rows[0];
}

describe('memory.forget.preview and memory.forget.apply', () => {
  it('shows the matching facts and messages, then forgets exactly those', async () => {
    const userId = randomUUID();
    const secret = await say(userId, 'user', 'My passport number is X1234567, keep it handy.');
    const reply = await say(userId, 'assistant', 'Noted.');
    const other = await say(userId, 'user', 'I went hiking in the Alps last summer.');
    const fact = (
      await clientBus.request(memoryFactsRemember, {
        userId,
        content: 'Passport expires in March 2031',
      })
    ).fact;
    const hiking = (
      await clientBus.request(memoryFactsRemember, { userId, content: 'Likes hiking' })
    ).fact;

    const matches = await preview(userId, 'passport');
    expect(matches.map((match) => match.id).sort()).toEqual([secret.id, fact.id].sort());
    expect(matches.find((match) => match.id === fact.id)).toEqual({
      kind: 'fact',
      id: fact.id,
      text: 'Passport expires in March 2031',
      createdAt: fact.createdAt,
    });

    // Repeated items, an unknown id and a forget of the same message count once.
    const forgotten = await forget(userId, [
      { kind: 'message', id: secret.id },
      { kind: 'fact', id: fact.id },
      { kind: 'message', id: secret.id },
      { kind: 'fact', id: randomUUID() },
    ]);
    expect(forgotten).toBe(2);
    // Forgotten items no longer count in the rarity weights.
    expect(await itemCount(userId)).toBe(3);

    expect(await preview(userId, 'passport')).toEqual([]);
    const found = await searchIds(userId, 'passport number expires X1234567');
    expect(found).not.toContain(secret.id);
    expect(found).not.toContain(fact.id);
    // What was not asked for is still there.
    expect(await searchIds(userId, 'hiking Alps')).toEqual(
      expect.arrayContaining([other.id, hiking.id]),
    );

    // Recall neither shows it among the recent messages nor finds it.
    const recall = await clientBus.request(memoryRecall, {
      userId,
      conversationId: secret.conversationId,
      query: 'what is my passport number?',
    });
    expect(recall.recent.map((message) => message.id)).toEqual([reply.id, other.id]);
    expect(recall.relevant.map((item) => item.id)).not.toContain(secret.id);
    expect(recall.relevant.map((item) => item.id)).not.toContain(fact.id);

    // Kept for the record: the message row (without embeddings) and the closed fact.
    expect(await messageState(secret.id)).toEqual({ is_forgotten: true, embeddings: 0 });
    const kept = await clientBus.request(memoryFactsGet, { userId, id: fact.id });
    expect(kept.fact).toMatchObject({ content: fact.content, supersededBy: null });
    expect(kept.fact.validTo).not.toBeNull();

    // Forgetting again changes nothing.
    expect(
      await forget(userId, [
        { kind: 'message', id: secret.id },
        { kind: 'fact', id: fact.id },
      ]),
    ).toBe(0);
  });

  it('forgets an episode that says it too: recall brings memory files back, so forgetting reaches them', async () => {
    const userId = randomUUID();
    const path = 'episodes/2026-11-20/0930-trip.md';
    await clientBus.request(memoryFilesWrite, {
      userId,
      path,
      content: '# Renewing the passport\n\nThe user gave passport number Y7654321 for the form.',
    });
    await clientBus.request(memoryFilesWrite, {
      userId,
      path: 'notes/groceries.md',
      content: 'Milk, eggs, bread.',
    });

    const matches = await preview(userId, 'passport number');
    const episode = matches.find((match) => match.kind === 'file');
    expect(episode?.text).toContain('Y7654321');
    expect(matches.every((match) => !match.text.includes('Milk'))).toBe(true);

    expect(await forget(userId, [{ kind: 'file', id: episode?.id ?? '' }])).toBe(1);
    expect(await searchIds(userId, 'passport number Y7654321')).not.toContain(episode?.id);
    const asked = await say(userId, 'user', 'what is my passport number?');
    const recall = await clientBus.request(memoryRecall, {
      userId,
      conversationId: asked.conversationId,
      messageId: asked.id,
      query: asked.content,
    });
    expect(JSON.stringify(recall)).not.toContain('Y7654321');
    await expect(clientBus.request(memoryFilesRead, { userId, path })).rejects.toMatchObject({
      code: 'not_found',
    });
    // Forgetting again changes nothing.
    expect(await forget(userId, [{ kind: 'file', id: episode?.id ?? '' }])).toBe(0);
  });

  it("never forgets another user's memories, and counts them for nothing", async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    const message = await say(alice, 'user', 'The safe code is 4711.');
    const fact = (
      await clientBus.request(memoryFactsRemember, { userId: alice, content: 'Safe code 4711' })
    ).fact;

    expect(await preview(bob, 'safe code')).toEqual([]);
    expect(
      await forget(bob, [
        { kind: 'message', id: message.id },
        { kind: 'fact', id: fact.id },
      ]),
    ).toBe(0);

    expect((await preview(alice, 'safe code')).map((match) => match.id).sort()).toEqual(
      [message.id, fact.id].sort(),
    );
    expect(await messageState(message.id)).toEqual({ is_forgotten: false, embeddings: 1 });
    expect(
      (await clientBus.request(memoryFactsGet, { userId: alice, id: fact.id })).fact.validTo,
    ).toBeNull();
  });

  it('answers bad requests at its edge', async () => {
    const userId = randomUUID();
    expect(
      await sendRaw(clientBus, 'memory.forget.preview', { userId, query: 'x', limit: 51 }),
    ).toMatchObject({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/^limit: /) },
    });
    expect(await sendRaw(clientBus, 'memory.forget.apply', { userId, items: [] })).toMatchObject({
      ok: false,
      error: { code: 'bad_request', message: expect.stringMatching(/^items: /) },
    });
    expect(
      await sendRaw(clientBus, 'memory.forget.apply', {
        userId,
        items: [{ kind: 'summary', id: randomUUID() }],
      }),
    ).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });
});
