import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { sendRaw } from '@jarvis/bus/testing';
import {
  type ImportedMessage,
  type MemorySearchRequest,
  memoryAppend,
  memoryFactsRemember,
  memoryImport,
  memoryRecall,
  memorySearch,
  type SearchResult,
  type StoredMessage,
} from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFactHandlers } from '../facts-handlers';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import { searchMemory, searchMemoryViews } from './search-service';

// One user's chat export spread over 2023, a topic or two a month, and a later, second chat.
const DIARY: [ImportedMessage['role'], string, string][] = [
  ['user', '2023-01-08T09:15:00.000Z', 'Happy new year! My resolution is to read twenty books.'],
  ['assistant', '2023-01-08T09:15:30.000Z', 'I can keep a list of the books as you finish them.'],
  ['user', '2023-02-03T18:20:00.000Z', 'I booked flights to Lisbon for a long weekend in April.'],
  ['assistant', '2023-02-03T18:21:00.000Z', 'Try the custard tarts in Belém and ride tram 28 up.'],
  [
    'user',
    '2023-03-14T08:05:00.000Z',
    'I have a dentist appointment on Thursday at 9am to fix a cracked molar.',
  ],
  ['assistant', '2023-03-14T08:06:00.000Z', 'Noted, I will remind you on Wednesday evening.'],
  ['user', '2023-03-20T19:40:00.000Z', 'My sister Clara is moving to Edinburgh for her new job.'],
  ['assistant', '2023-03-20T19:41:00.000Z', 'Edinburgh is a beautiful city, she will love it.'],
  [
    'user',
    '2023-04-09T07:30:00.000Z',
    'This morning I painted a sunrise over the lake with watercolours.',
  ],
  [
    'assistant',
    '2023-04-09T07:31:00.000Z',
    'The soft oranges of dawn are hard to blend. Well done!',
  ],
  ['user', '2023-04-28T21:00:00.000Z', 'The view from the Miradouro at dusk was the highlight.'],
  [
    'user',
    '2023-05-13T11:00:00.000Z',
    'We adopted a rescue dog named Max, a three-year-old beagle.',
  ],
  [
    'assistant',
    '2023-05-13T11:02:00.000Z',
    'Congratulations! Beagles love long walks and sniffing.',
  ],
  ['user', '2023-06-06T20:10:00.000Z', 'I started guitar lessons on Tuesday evenings.'],
  ['assistant', '2023-06-06T20:11:00.000Z', 'Start with the G, C and D chords; they cover a lot.'],
  ['user', '2023-07-02T06:45:00.000Z', 'I signed up for the Berlin marathon in September.'],
  ['assistant', '2023-07-02T06:46:00.000Z', 'A sixteen-week training block would fit nicely.'],
  ['user', '2023-08-19T10:00:00.000Z', 'My sourdough starter finally doubled overnight.'],
  ['assistant', '2023-08-19T10:01:00.000Z', 'Time to bake a loaf while it is lively.'],
  ['user', '2023-09-24T15:30:00.000Z', 'Finished the marathon in 4 hours 12 minutes!'],
  ['assistant', '2023-09-24T15:31:00.000Z', 'Amazing effort, rest your legs this week.'],
  ['user', '2023-10-05T12:00:00.000Z', 'I found out I am allergic to peanuts, so no more satay.'],
  ['assistant', '2023-10-05T12:01:00.000Z', 'I will flag recipes that contain nuts from now on.'],
  ['user', '2023-10-30T17:20:00.000Z', 'Max chewed through his leash again at the park.'],
  ['user', '2023-11-11T09:00:00.000Z', 'I got promoted to team lead at work.'],
  [
    'assistant',
    '2023-11-11T09:01:00.000Z',
    'Well deserved. Want help planning your first one-on-ones?',
  ],
  ['user', '2023-12-02T13:00:00.000Z', "Can you suggest a gift for Clara's birthday?"],
  ['assistant', '2023-12-02T13:01:00.000Z', 'A cashmere scarf would suit the Scottish winters.'],
  ['user', '2023-12-24T19:00:00.000Z', "We spent Christmas Eve at my parents' house in Porto."],
  ['assistant', '2023-12-24T19:01:00.000Z', 'Feliz Natal! Enjoy the bacalhau.'],
];
const SECOND_CHAT: [ImportedMessage['role'], string, string][] = [
  ['user', '2024-02-10T10:00:00.000Z', 'Max has learned to sit and give a paw.'],
  ['assistant', '2024-02-10T10:01:00.000Z', 'Good boy! Treats work well for training beagles.'],
  ['user', '2024-02-11T08:00:00.000Z', 'Next I want to paint a portrait of Max.'],
];
// Another user who talks about the same things.
const OTHER_USERS_CHAT: [ImportedMessage['role'], string, string][] = [
  ['user', '2023-03-15T10:00:00.000Z', 'My dentist appointment got moved to Friday.'],
  ['assistant', '2023-03-15T10:01:00.000Z', 'I updated your calendar.'],
  ['user', '2023-04-10T18:00:00.000Z', 'I painted the kitchen a pale blue.'],
  ['user', '2023-05-01T09:00:00.000Z', 'Thinking about a weekend trip to Lisbon.'],
  ['user', '2023-05-02T09:00:00.000Z', 'Our dog Max is a poodle who hates the rain.'],
];

const userA = randomUUID();
const userB = randomUUID();
const diaryId = randomUUID();
const secondChatId = randomUUID();
const otherUsersChatId = randomUUID();

let memory: MemoryFixture;
let clientBus: Bus;
// What each user stored, as memory.recall reports it.
const stored = new Map<string, StoredMessage & { userId: string }>();

function toImported(
  messages: [ImportedMessage['role'], string, string][],
  source: string,
): ImportedMessage[] {
  return messages.map(([role, createdAt, content], line) => ({
    role,
    content,
    createdAt,
    metadata: { source, line },
  }));
}

async function importChat(
  userId: string,
  conversationId: string,
  messages: [ImportedMessage['role'], string, string][],
  source: string,
): Promise<void> {
  const { imported } = await clientBus.request(memoryImport, {
    userId,
    conversationId,
    batchKey: `${source}:${conversationId}`,
    firstIndex: 0,
    messages: toImported(messages, source),
  });
  expect(imported).toBe(messages.length);
  const { recent } = await clientBus.request(memoryRecall, {
    userId,
    conversationId,
    recentLimit: 500,
  });
  for (const message of recent) stored.set(message.id, { ...message, userId });
}

beforeAll(async () => {
  memory = await startMemoryFixture('memory-search', [registerFactHandlers]);
  ({ clientBus } = memory);

  await importChat(userA, diaryId, DIARY, 'whatsapp');
  await importChat(userA, secondChatId, SECOND_CHAT, 'telegram');
  await importChat(userB, otherUsersChatId, OTHER_USERS_CHAT, 'signal');
});

afterAll(async () => {
  await memory?.stop();
});

function search(
  userId: string,
  query: string,
  options: Omit<MemorySearchRequest, 'userId' | 'query'> = {},
): Promise<SearchResult[]> {
  return clientBus
    .request(memorySearch, { userId, query, ...options })
    .then((response) => response.results);
}

function idOf(content: string): string {
  for (const message of stored.values()) if (message.content === content) return message.id;
  throw new Error(`no stored message says ${JSON.stringify(content)}`);
}

function idsOf(userId: string, where: (message: StoredMessage) => boolean = () => true) {
  return [...stored.values()]
    .filter((message) => message.userId === userId && where(message))
    .map((message) => message.id);
}

function textsOf(results: SearchResult[]): string[] {
  return results.map((result) => result.text);
}

describe('memory.search', () => {
  it('answers a question about a topic with that message first, as it was imported', async () => {
    const results = await search(userA, 'When is my dentist appointment?');

    const text = 'I have a dentist appointment on Thursday at 9am to fix a cracked molar.';
    expect(results[0]).toEqual({
      kind: 'message',
      id: idOf(text),
      score: expect.any(Number),
      text,
      metadata: { source: 'whatsapp', line: 4 },
      createdAt: '2023-03-14T08:05:00.000Z',
      conversationId: diaryId,
    });
    expect(results[0]?.score).toBeGreaterThan(results[1]?.score ?? Number.POSITIVE_INFINITY);
  });

  it.each([
    ['What is the name of the dog we adopted?', 'We adopted a rescue dog named Max'],
    ['Which city did I book flights to?', 'I booked flights to Lisbon'],
    ['What am I allergic to?', 'I found out I am allergic to peanuts'],
    ['Where did my sister Clara move?', 'My sister Clara is moving to Edinburgh'],
    ['how long did the marathon take me', 'Finished the marathon in 4 hours'],
  ])('ranks the message that answers %j in the top 3', async (question, answer) => {
    const results = await search(userA, question);

    expect(
      textsOf(results.slice(0, 3)).some((text) => text.startsWith(answer)),
      `top 3 were ${JSON.stringify(textsOf(results.slice(0, 3)))}`,
    ).toBe(true);
  });

  it('finds "painted" when asked about "paintings"', async () => {
    const results = await search(userA, 'Did I tell you about my paintings?');

    expect(textsOf(results.slice(0, 3))).toContain(
      'This morning I painted a sunrise over the lake with watercolours.',
    );
  });

  it('returns at most `limit` results, and 10 by default', async () => {
    expect(await search(userA, 'Max the beagle', { limit: 2 })).toHaveLength(2);
    expect(await search(userA, 'Max the beagle', { limit: 1 })).toHaveLength(1);
    expect(await search(userA, 'Max the beagle')).toHaveLength(10);
    // A high limit returns what relates to the query, not every message the user has.
    const wide = await search(userA, 'Max the beagle', { limit: 100 });
    expect(wide.length).toBeGreaterThan(10);
    expect(wide.length).toBeLessThan(idsOf(userA).length);
  });

  it('keeps to one conversation when asked to', async () => {
    const inSecond = await search(userA, 'Max the dog', { conversationId: secondChatId });
    const inDiary = await search(userA, 'Max the dog', { conversationId: diaryId });

    expect(inSecond.length).toBeGreaterThan(0);
    expect(inSecond.every((result) => result.conversationId === secondChatId)).toBe(true);
    expect(textsOf(inSecond)).toContain('Max has learned to sit and give a paw.');
    expect(inDiary.length).toBeGreaterThan(0);
    expect(inDiary.every((result) => result.conversationId === diaryId)).toBe(true);
    expect(textsOf(inDiary)).toContain(
      'We adopted a rescue dog named Max, a three-year-old beagle.',
    );
  });

  it('keeps to the from/to range, from inclusive and to exclusive', async () => {
    const october = await search(userA, 'Max', {
      from: '2023-10-01T00:00:00Z',
      to: '2023-11-01T00:00:00Z',
      limit: 100,
    });

    expect(october.map((result) => result.id).sort()).toEqual(
      idsOf(userA, (message) => message.createdAt.startsWith('2023-10')).sort(),
    );
    expect(october[0]?.text).toBe('Max chewed through his leash again at the park.');

    const edges = await search(userA, 'Max', {
      from: '2023-10-05T12:00:00.000Z',
      to: '2023-10-30T17:20:00.000Z',
      limit: 100,
    });
    expect(textsOf(edges).sort()).toEqual([
      'I found out I am allergic to peanuts, so no more satay.',
      'I will flag recipes that contain nuts from now on.',
    ]);
  });

  it('narrows to a month the query names', async () => {
    const march = await search(userA, 'what did I say in March 2023', { limit: 100 });

    expect(march.map((result) => result.id).sort()).toEqual(
      idsOf(userA, (message) => message.createdAt.startsWith('2023-03')).sort(),
    );
  });

  it('narrows to a calendar day the query names, and a day either side', async () => {
    const day = await search(userA, 'what did I say on 14 March, 2023', { limit: 100 });
    const sameDay = await search(userA, 'what did I say on March 14th, 2023', { limit: 100 });

    expect(textsOf(day).sort()).toEqual([
      'I have a dentist appointment on Thursday at 9am to fix a cracked molar.',
      'Noted, I will remind you on Wednesday evening.',
    ]);
    expect(textsOf(sameDay).sort()).toEqual(textsOf(day).sort());
  });

  it('narrows to where the spoken month and the from/to range overlap', async () => {
    const lateMarch = await search(userA, 'what did I say in March 2023', {
      from: '2023-03-16T00:00:00Z',
      to: '2023-12-31T00:00:00Z',
      limit: 100,
    });

    expect(textsOf(lateMarch).sort()).toEqual([
      'Edinburgh is a beautiful city, she will love it.',
      'My sister Clara is moving to Edinburgh for her new job.',
    ]);
  });

  it('finds no messages when only facts are asked for', async () => {
    expect(await search(userA, 'dentist appointment', { kinds: ['fact'] })).toEqual([]);
    expect(
      (await search(userA, 'dentist appointment', { kinds: ['message'] })).length,
    ).toBeGreaterThan(0);
  });

  it("never shows one user another user's messages", async () => {
    const queries = [
      'dentist appointment',
      'I painted the kitchen a pale blue.',
      'Our dog Max is a poodle who hates the rain.',
      'weekend trip to Lisbon',
      'We adopted a rescue dog named Max, a three-year-old beagle.',
      'what did I say in March 2023',
      'Max',
    ];
    const ownedBy = {
      [userA]: new Set(idsOf(userA)),
      [userB]: new Set(idsOf(userB)),
    };

    for (const [userId, own] of Object.entries(ownedBy)) {
      for (const query of queries) {
        const results = await search(userId, query, { limit: 100 });
        const foreign = results.filter((result) => !own.has(result.id));
        expect(foreign, `${query} as ${userId === userA ? 'A' : 'B'}`).toEqual([]);
      }
    }
    // Not vacuous: B does find B's own dentist message.
    expect(textsOf(await search(userB, 'dentist appointment'))[0]).toBe(
      'My dentist appointment got moved to Friday.',
    );
  });

  it('finds nothing for a user without messages', async () => {
    expect(await search(randomUUID(), 'dentist appointment')).toEqual([]);
  });

  it('answers a query of only stop words', async () => {
    const results = await search(userA, 'what is the');

    expect(results.length).toBeLessThanOrEqual(10);
    const own = new Set(idsOf(userA));
    expect(results.every((result) => own.has(result.id))).toBe(true);
  });

  it('finds a message as soon as it is appended', async () => {
    const { message } = await clientBus.request(memoryAppend, {
      userId: userA,
      conversationId: secondChatId,
      role: 'user',
      content: 'I booked a pottery class for Saturday morning.',
      metadata: { via: 'app' },
    });

    const results = await search(userA, 'When is my pottery class?');

    expect(results[0]).toMatchObject({
      id: message.id,
      kind: 'message',
      text: 'I booked a pottery class for Saturday morning.',
      metadata: { via: 'app' },
      createdAt: message.createdAt,
      conversationId: secondChatId,
    });
    expect(textsOf(await search(userB, 'When is my pottery class?'))).not.toContain(
      message.content,
    );
  });

  it('reads full-text indexes that keep no pending list', async () => {
    const { rows } = await memory.db.pool.query<{ name: string; options: string[] | null }>(
      `SELECT c.relname AS name, c.reloptions AS options
       FROM pg_class c JOIN pg_am a ON a.oid = c.relam
         JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE a.amname = 'gin' AND n.nspname = 'memory'`,
    );

    expect(rows.map((row) => row.name).sort()).toEqual([
      'document_chunks_search',
      'facts_search',
      'files_search',
      'messages_search',
      'summaries_search',
    ]);
    for (const row of rows) expect(row.options ?? [], row.name).toContain('fastupdate=off');
  });

  it.each([
    ['an empty query', { query: '' }, 'query'],
    ['a query of spaces', { query: '   ' }, 'query'],
    ['limit 0', { query: 'dentist', limit: 0 }, 'limit'],
    ['limit 101', { query: 'dentist', limit: 101 }, 'limit'],
    ['a userId that is not a uuid', { query: 'dentist', userId: 'user-a' }, 'userId'],
    [
      'a conversationId that is not a uuid',
      { query: 'dentist', conversationId: '1234' },
      'conversationId',
    ],
    ['an unknown kind', { query: 'dentist', kinds: ['note'] }, 'kinds'],
    ['a from that is not a date', { query: 'dentist', from: 'last tuesday' }, 'from'],
  ])('answers bad_request to %s', async (_label, body, field) => {
    const reply = await sendRaw(clientBus, 'memory.search', { userId: userA, ...body });

    expect(reply).toEqual({
      ok: false,
      error: { code: 'bad_request', message: expect.stringContaining(field) },
    });
  });
});

describe('searchMemoryViews', () => {
  it('ranks each view as a search of its kinds alone does', async () => {
    const userId = randomUUID();
    await importChat(userId, randomUUID(), DIARY, 'whatsapp');
    for (const content of [
      'Clara, the sister of the user, lives in Edinburgh.',
      'The user has a beagle called Max.',
      'The user is allergic to peanuts.',
    ]) {
      await clientBus.request(memoryFactsRemember, { userId, content });
    }
    const query = 'Where does my sister Clara live now?';
    const views = [
      { kinds: ['fact'], limit: 2 },
      { kinds: ['message', 'fact', 'summary', 'document'], limit: 6 },
    ] as const;

    // One clock for both: recency weighs every score.
    const now = new Date();

    const together = await searchMemoryViews(memory.db.pool, { userId, query }, views, now);
    const alone = await Promise.all(
      views.map((view) =>
        searchMemory(
          memory.db.pool,
          { userId, query, kinds: [...view.kinds], limit: view.limit },
          now,
        ),
      ),
    );

    expect(together).toEqual(alone);
    const [facts, everything] = together;
    expect(facts.results.map((result) => result.text)).toEqual([
      'Clara, the sister of the user, lives in Edinburgh.',
      expect.any(String),
    ]);
    expect(facts.results.every((result) => result.kind === 'fact')).toBe(true);
    expect(textsOf(everything.results)).toContain(
      'My sister Clara is moving to Edinburgh for her new job.',
    );
  });
});
