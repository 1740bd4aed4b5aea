import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { FACT_CONTENT_MAX_CHARS, type MessageRole, memoryAppend } from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type MemoryFixture, startMemoryFixture } from '../memory-fixture';
import { parseRememberCommand, parseRememberRequest } from './remember-command';

describe('parseRememberRequest', () => {
  it.each([
    ['remember that my passport expires in May 2027', 'my passport expires in May 2027'],
    ['Remember that my passport expires in May 2027.', 'my passport expires in May 2027.'],
    ['  please remember: the wifi password is hunter2 ', 'the wifi password is hunter2'],
    ['Please Remember, Ana is allergic to nuts', 'Ana is allergic to nuts'],
    ['REMEMBER THAT I park on level 3', 'I park on level 3'],
    ['remember I take the 8:15 train', 'I take the 8:15 train'],
    ['remember that\nline one\nline two', 'line one\nline two'],
    ["Remember it's mum's birthday on 5 May", "it's mum's birthday on 5 May"],
    ['remember this: the spare key is under the blue pot', 'the spare key is under the blue pot'],
    ['save that my locker code is 4512', 'my locker code is 4512'],
    ['Save: the boiler was serviced in May', 'the boiler was serviced in May'],
    ['keep in mind that I am vegetarian', 'I am vegetarian'],
    ['Keep in mind: Ana starts school in September', 'Ana starts school in September'],
    ['note that the gym closes at 9 on Sundays', 'the gym closes at 9 on Sundays'],
    ['Please note: my flight lands at 14:05', 'my flight lands at 14:05'],
    ['remember "the gate code is 7781"', 'the gate code is 7781'],
    ['save this: “Dr. Okafor, Elm Street 4”', 'Dr. Okafor, Elm Street 4'],
    ['keep this in mind: "I never fly before 9"', 'I never fly before 9'],
    ['note that "the car is a 2019 Corolla"', 'the car is a 2019 Corolla'],
    ['remember this\n> line one\n> line two', 'line one\nline two'],
    ['remember that my son said "hi there"', 'my son said "hi there"'],
  ])('%j stores the text %j', (message, text) => {
    expect(parseRememberRequest(message)).toEqual({ type: 'text', text });
    expect(parseRememberCommand(message)).toBe(text);
  });

  it.each([
    'remember this',
    'Remember this!',
    'please remember that',
    'remember that',
    'remember it',
    'remember the above',
    'remember what I said',
    'remember this for later',
    'save this',
    'Save that, please',
    'save this for next time',
    'keep this in mind',
    'Keep that in mind please.',
    'keep it in mind',
    'note that',
    'Note that.',
    'note this down',
  ])('%j points to the message before it', (message) => {
    expect(parseRememberRequest(message)).toEqual({ type: 'referent' });
    expect(parseRememberCommand(message)).toBeUndefined();
  });

  it.each([
    'do you remember my passport expiry?',
    'Do you remember that I moved to Porto?',
    'I remember that trip to Lisbon fondly',
    'remembering that is hard',
    'remember when we met?',
    'remember that ok?',
    'can you save this?',
    'remember: ab',
    'please remember',
    'save',
    'save the file as report.md',
    'save this as a skill',
    'save that file',
    'note the time',
    'noted, thanks',
    'what should I remember that for',
  ])('%j asks for nothing to be stored', (message) => {
    expect(parseRememberRequest(message)).toBeUndefined();
  });

  it('leaves a fact too long to store to extraction', () => {
    const long = `remember that ${'x'.repeat(FACT_CONTENT_MAX_CHARS + 1)}`;
    expect(parseRememberCommand(long)).toBeUndefined();
    expect(
      parseRememberCommand(`remember that ${'x'.repeat(FACT_CONTENT_MAX_CHARS)}`),
    ).toHaveLength(FACT_CONTENT_MAX_CHARS);
  });
});

describe('"remember" on memory.messages.append', () => {
  let memory: MemoryFixture;
  let db: TestDatabase;
  let clientBus: Bus;

  beforeAll(async () => {
    memory = await startMemoryFixture('remember-command');
    ({ db, clientBus } = memory);
  });

  afterAll(async () => {
    await memory?.stop();
  });

  async function append(
    userId: string,
    conversationId: string | undefined,
    role: MessageRole,
    content: string,
  ) {
    const { message } = await clientBus.request(memoryAppend, {
      userId,
      role,
      content,
      ...(conversationId ? { conversationId } : {}),
    });
    return message;
  }

  // A conversation that holds the messages, then the command; what was stored because of it.
  async function say(before: [MessageRole, string][], command: string) {
    const userId = randomUUID();
    let conversationId: string | undefined;
    for (const [role, content] of before) {
      conversationId = (await append(userId, conversationId, role, content)).conversationId;
    }
    const message = await append(userId, conversationId, 'user', command);
    const { rows } = await db.pool.query<{ content: string; source_message_ids: string[] }>(
      `SELECT content, source_message_ids::text[] FROM memory.facts
       WHERE user_id = $1 AND valid_to IS NULL`,
      [userId],
    );
    const extractions = await db.pool.query<{ run_id: string; operations: { op: string }[] }>(
      'SELECT run_id, operations FROM memory.extractions WHERE user_id = $1',
      [userId],
    );
    return { message, facts: rows, extractions: extractions.rows };
  }

  const SHORT = 'My dentist is Dr. Okafor, Elm Street 4, every second Tuesday.';
  // Well over what is condensed later, and over what one fact holds.
  const LONG = `Here is the plan for the garden. ${'We dig the beds in March, sow the beans in April, and water them twice a week. '.repeat(30)}`;
  const EARLIER = 'I usually take the 8:15 train to work.';

  const PHRASINGS = [
    { inline: 'remember that', quoted: 'remember', referent: 'remember this' },
    { inline: 'save that', quoted: 'save this:', referent: 'save this' },
    { inline: 'keep in mind that', quoted: 'keep this in mind:', referent: 'keep this in mind' },
    { inline: 'note that', quoted: 'note that', referent: 'note that' },
  ];

  describe.each(PHRASINGS)('"$referent"', (phrasing) => {
    it('with the text inline stores that text', async () => {
      const { facts, extractions, message } = await say(
        [['user', EARLIER]],
        `${phrasing.inline} my locker code is 4512`,
      );
      expect(facts.map((fact) => fact.content)).toEqual(['my locker code is 4512']);
      expect(extractions).toEqual([
        { run_id: message.id, operations: [expect.objectContaining({ op: 'add' })] },
      ]);
    });

    it('with quoted text stores the quote', async () => {
      const { facts } = await say(
        [['user', EARLIER]],
        `${phrasing.quoted} "the gate code is 7781"`,
      );
      expect(facts.map((fact) => fact.content)).toEqual(['the gate code is 7781']);
    });

    it('after a short message stores that message', async () => {
      const { facts, message } = await say(
        [
          ['user', EARLIER],
          ['assistant', 'Noted.'],
          ['user', SHORT],
        ],
        phrasing.referent,
      );
      expect(facts.map((fact) => fact.content)).toEqual([SHORT]);
      expect(facts[0]?.source_message_ids).toContain(message.id);
    });

    it('after a long message stores it, clipped to what a fact holds', async () => {
      const { facts, extractions } = await say(
        [
          ['user', EARLIER],
          ['user', LONG],
        ],
        phrasing.referent,
      );
      expect(facts.map((fact) => fact.content)).toEqual([LONG.slice(0, FACT_CONTENT_MAX_CHARS)]);
      // The extraction of the turn condenses it later: the row names what it was taken from.
      expect(extractions[0]?.operations).toEqual([
        expect.objectContaining({ op: 'add', referentMessageId: expect.any(String) }),
      ]);
    });
  });

  it('takes the assistant\'s reply when the user answers it with "remember that"', async () => {
    const reply = 'Your passport number ends in 4471 and it expires on 3 March 2031.';
    const { facts } = await say(
      [
        ['user', 'What does my passport say?'],
        ['assistant', reply],
      ],
      'remember that',
    );
    expect(facts.map((fact) => fact.content)).toEqual([reply]);
  });

  it("keeps the user's own words when the reply only acknowledges them", async () => {
    const { facts } = await say(
      [
        ['user', SHORT],
        ['assistant', "Noted, I'll keep that in mind."],
      ],
      'remember this',
    );
    expect(facts.map((fact) => fact.content)).toEqual([SHORT]);
  });

  it('keeps the reply the user asked for', async () => {
    const recipe =
      'Pancakes for four: 250 g flour, 2 eggs, 500 ml milk, a pinch of salt. Whisk, rest 30 minutes, fry in butter.';
    const { facts } = await say(
      [
        ['user', 'Give me a pancake recipe'],
        ['assistant', recipe],
      ],
      'save this',
    );
    expect(facts.map((fact) => fact.content)).toEqual([recipe]);
  });

  it('stores nothing when nothing was said before', async () => {
    const { facts, extractions } = await say([], 'remember this');
    expect(facts).toEqual([]);
    expect(extractions).toEqual([]);
  });

  it('stores a fact told twice once, the second as a noop', async () => {
    const userId = randomUUID();
    const first = await append(userId, undefined, 'user', 'remember that I am allergic to peanuts');
    await append(userId, first.conversationId, 'user', 'REMEMBER: I am allergic to peanuts.');
    const { rows } = await db.pool.query<{ content: string }>(
      'SELECT content FROM memory.facts WHERE user_id = $1',
      [userId],
    );
    expect(rows).toEqual([{ content: 'I am allergic to peanuts' }]);
    const ops = await db.pool.query<{ op: string }>(
      `SELECT operations->0->>'op' AS op FROM memory.extractions WHERE user_id = $1
       ORDER BY created_at`,
      [userId],
    );
    expect(ops.rows.map((row) => row.op)).toEqual(['add', 'noop']);
  });
});
