import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import {
  memoryAppend,
  memoryFactsGet,
  memoryFactsList,
  memoryFactsRemember,
  memoryFilesWrite,
  memoryInstructionsPut,
  memoryRecall,
  memorySearch,
} from '@jarvis/contracts';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFactHandlers } from '../facts-handlers';
import { registerFileHandlers } from '../files-handlers';
import { registerInstructionsHandlers } from '../instructions-handlers';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import type { RecentMessage } from '../repositories/messages-repository';
import { toDialogue } from './recall-service';

const conversationId = randomUUID();

function message(role: 'user' | 'assistant', content: string, replyTo?: RecentMessage) {
  return {
    id: randomUUID(),
    conversationId,
    role,
    content,
    createdAt: new Date().toISOString(),
    replyTo: replyTo?.id,
  } satisfies RecentMessage;
}

describe('toDialogue', () => {
  it('puts each reply after its question, and the own message last', () => {
    const q1 = message('user', 'Q1');
    const q2 = message('user', 'Q2');
    const q3 = message('user', 'Q3');
    // Stored while Q3 waited for its turn: a mission's report, which answers no message.
    const report = message('assistant', 'the report');
    const a1 = message('assistant', 'A1', q1);
    const a2 = message('assistant', 'A2', q2);

    const dialogue = toDialogue([q1, q2, q3, report, a1, a2], q3.id);

    expect(dialogue.map((item) => item.content)).toEqual([
      'Q1',
      'A1',
      'Q2',
      'A2',
      'the report',
      'Q3',
    ]);
  });

  it('leaves out a reply to the own message that an earlier attempt stored', () => {
    const q1 = message('user', 'Q1');
    const stale = message('assistant', 'an answer from a crashed attempt', q1);

    expect(toDialogue([q1, stale], q1.id).map((item) => item.content)).toEqual(['Q1']);
  });

  it('keeps the stored order of messages that name no question, as before replies did', () => {
    const items = [message('user', 'old Q'), message('assistant', 'old A'), message('user', 'Q')];

    expect(toDialogue(items, undefined)).toEqual(items);
  });
});

describe('recall of the memory tiers', () => {
  let memory: MemoryFixture;
  let bus: Bus;

  beforeAll(async () => {
    memory = await startMemoryFixture('memory-recall-tiers', [
      registerFactHandlers,
      registerFileHandlers,
      registerInstructionsHandlers,
    ]);
    bus = memory.clientBus;
  });

  afterAll(async () => {
    await memory?.stop();
  });

  async function say(userId: string, content: string, conversationId?: string) {
    return (await bus.request(memoryAppend, { userId, conversationId, role: 'user', content }))
      .message;
  }

  function recall(userId: string, conversationId: string, query: string) {
    return bus.request(memoryRecall, { userId, conversationId, query, recentLimit: 4 });
  }

  // Written days ago: the file and what search ranks it by. Answers the file's id and time.
  async function backdate(userId: string, path: string, days: number) {
    const at = new Date(Date.now() - days * 86_400_000);
    const { rows } = await memory.db.pool.query<{ id: string }>(
      `UPDATE memory.files SET created_at = $3, updated_at = $3
       WHERE user_id = $1 AND path = $2 AND deleted_at IS NULL RETURNING id`,
      [userId, path, at],
    );
    const id = rows[0]?.id ?? '';
    await memory.db.pool.query(
      'UPDATE memory.embeddings SET item_created_at = $2 WHERE item_id = $1',
      [id, at],
    );
    return { id, at };
  }

  it('recalls an episode note from last week for a related question, as a cited excerpt', async () => {
    const userId = randomUUID();
    const weekAgo = new Date(Date.now() - 7 * 86_400_000).toISOString().slice(0, 10);
    const path = `episodes/${weekAgo}/0930-1a2b3c4d.md`;
    const episode = [
      '---',
      'title: "Booking the ferry to Bergen"',
      'topics: ["travel", "ferry"]',
      '---',
      '# Booking the ferry to Bergen',
      '',
      '## Asked',
      'Find a ferry from Hirtshals to Bergen for two adults and a car.',
      '',
      '## Done',
      'Compared the Fjord Line and Color Line crossings.',
      '',
      '## Outcome',
      'Booked the Fjord Line night crossing to Bergen on 3 December, with a cabin.',
      '',
      '## Open loops',
      '- pay the balance before 20 November',
    ].join('\n');
    await bus.request(memoryFilesWrite, { userId, path, content: episode });
    const { id, at } = await backdate(userId, path, 7);
    // Other things said since, that share none of its words.
    const first = await say(userId, 'The plumber comes on Thursday about the boiler.');
    await say(userId, 'Remind me to water the tomatoes.', first.conversationId);
    const asked = await say(
      userId,
      'Which ferry crossing to Bergen did we book?',
      first.conversationId,
    );

    const context = await recall(userId, asked.conversationId, asked.content);

    const recalled = context.relevant.find((item) => item.kind === 'file');
    expect(recalled).toMatchObject({
      id,
      title: path,
      createdAt: at.toISOString(),
      text:
        'Booking the ferry to Bergen. Outcome: Booked the Fjord Line night crossing to Bergen ' +
        'on 3 December, with a cabin.',
    });
  });

  it('gives the instructions, every rule and the skills index, and recalls no skill as a file', async () => {
    const userId = randomUUID();
    const { conversationId } = await say(userId, 'Hello there.');
    await bus.request(memoryInstructionsPut, { userId, text: 'Answer in Norwegian.' });
    const rule = await bus.request(memoryFactsRemember, {
      userId,
      content: 'Always use metric units for distances.',
      category: 'rule',
    });
    await bus.request(memoryFilesWrite, {
      userId,
      path: 'skills/plan-a-trip.md',
      content:
        '---\nname: plan-a-trip\ndescription: How to plan a trip with distances and ferries\n---\n' +
        '1. Ask for the dates.\n2. Compare ferries and distances.\n',
    });

    const context = await recall(
      userId,
      conversationId,
      'How far is it to plan the trip by ferry, in distances?',
    );

    expect(context.instructions).toEqual({ text: 'Answer in Norwegian.', tokens: 5 });
    expect(context.rules).toEqual([
      { id: rule.fact.id, content: 'Always use metric units for distances.', tokens: 10 },
    ]);
    expect(context.skills).toEqual([
      { name: 'plan-a-trip', description: 'How to plan a trip with distances and ferries' },
    ]);
    // Both are shown anyway: neither is recalled again as a relevant item.
    expect(context.relevant.map((item) => item.id)).not.toContain(rule.fact.id);
    expect(context.relevant.filter((item) => item.kind === 'file')).toEqual([]);
  });

  it('leaves out a fact past its end, from recall and search, and keeps it in history', async () => {
    const userId = randomUUID();
    const { conversationId } = await say(userId, 'Hello there.');
    const endsSoon = new Date(Date.now() + 3_000);
    const { fact } = await bus.request(memoryFactsRemember, {
      userId,
      content: 'The user is working from the Lisbon office this week.',
      validTo: endsSoon.toISOString(),
    });
    const query = 'Which office is the user working from?';
    const recalledIds = async () =>
      (await recall(userId, conversationId, query)).relevant.map((item) => item.id);
    const foundIds = async () =>
      (await bus.request(memorySearch, { userId, query, kinds: ['fact'] })).results.map(
        (result) => result.id,
      );

    // Until its end it is a current fact like any other.
    expect(await recalledIds()).toContain(fact.id);
    expect(await foundIds()).toContain(fact.id);
    expect((await bus.request(memoryFactsList, { userId })).facts.map((item) => item.id)).toEqual([
      fact.id,
    ]);
    await waitFor(async () => Date.now() > endsSoon.getTime() + 50, { what: 'the fact ended' });

    expect(await recalledIds()).not.toContain(fact.id);
    expect(await foundIds()).not.toContain(fact.id);
    expect((await bus.request(memoryFactsList, { userId })).facts).toEqual([]);
    const history = await bus.request(memoryFactsList, { userId, includeInvalid: true });
    expect(history.facts.map((item) => item.id)).toEqual([fact.id]);
    expect((await bus.request(memoryFactsGet, { userId, id: fact.id })).fact).toMatchObject({
      content: 'The user is working from the Lisbon office this week.',
      validTo: endsSoon.toISOString(),
    });
  });
});
