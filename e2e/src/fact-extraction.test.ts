import { randomUUID } from 'node:crypto';
import {
  ChatResponse,
  type Fact,
  MemoryExtractionsListResponse,
  MemoryFactsGetResponse,
  MemoryFactsListResponse,
  MemoryFactsRememberResponse,
} from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// A phrase of the memory service's extraction prompt: it tells extraction requests apart from
// the chat turns themselves.
const EXTRACTION_PHRASE = 'long-term memory of a personal assistant';

type Turn = { runId: string; userMessageId: string; replyMessageId: string };

type ExtractionRow = {
  status: string;
  operations: Record<string, unknown>[];
  reason: string | null;
};

function isExtractionRequest(request: FakeLlmRequest): boolean {
  return sentMessages(request)[0]?.content.includes(EXTRACTION_PHRASE) ?? false;
}

// The turn, the existing facts and the recalled memories, as the extraction prompt shows them.
function extractionPrompt(request: FakeLlmRequest | undefined): string {
  return sentMessages(request).find((message) => message.role === 'user')?.content ?? '';
}

// The id of the existing fact whose line matches, as the model would read it off the prompt.
function shownFactId(request: FakeLlmRequest, pattern: RegExp): string {
  const line = extractionPrompt(request)
    .split('\n')
    .find((text) => /^\d+\. \[id [0-9a-f-]{36}\] /.test(text) && pattern.test(text));
  return line?.match(/\[id ([0-9a-f-]{36})\]/)?.[1] ?? randomUUID();
}

function recalledSection(request: FakeLlmRequest | undefined): string {
  return extractionPrompt(request).split('Already recalled:')[1] ?? '';
}

function answer(...operations: Record<string, unknown>[]): string {
  return JSON.stringify({ operations });
}

function add(content: string, importance = 6): Record<string, unknown> {
  return { op: 'add', content, category: 'fact', importance };
}

describe('fact extraction after each turn', () => {
  let fixture: StackFixture;
  let db: pg.Client;
  // What the fake model answers to the next extraction request.
  let answerExtraction: (request: FakeLlmRequest) => string = () => answer();

  const extractionCalls = () => fixture.fake.chatRequests().filter(isExtractionRequest);

  const call = (method: string, path: string, apiKey: string, body?: unknown) =>
    fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });

  async function newUser(name: string): Promise<string> {
    return (await fixture.createUser(name)).apiKey;
  }

  async function turn(apiKey: string, message: string): Promise<Turn> {
    const response = await fixture.chat(apiKey, { message });
    expect(response.status).toBe(200);
    const { runId } = ChatResponse.parse(await response.json());
    const { rows } = await db.query<{ user_message_id: string; reply_message_id: string }>(
      'SELECT user_message_id, reply_message_id FROM orchestrator.runs WHERE id = $1',
      [runId],
    );
    const run = rows[0];
    if (!run) throw new Error(`run ${runId} not recorded`);
    return { runId, userMessageId: run.user_message_id, replyMessageId: run.reply_message_id };
  }

  // Extraction runs in the background: its row in memory.extractions says it has finished.
  function extractionOf(runId: string): Promise<ExtractionRow> {
    return waitFor(
      async () => {
        const { rows } = await db.query<ExtractionRow>(
          'SELECT status, operations, reason FROM memory.extractions WHERE run_id = $1',
          [runId],
        );
        return rows[0];
      },
      { timeoutMs: 20_000, what: `the extraction of run ${runId}` },
    );
  }

  async function listFacts(apiKey: string, query = ''): Promise<Fact[]> {
    const response = await call('GET', `/v1/memory/facts${query}`, apiKey);
    expect(response.status).toBe(200);
    return MemoryFactsListResponse.parse(await response.json()).facts;
  }

  async function getFact(apiKey: string, id: string) {
    const response = await call('GET', `/v1/memory/facts/${id}`, apiKey);
    expect(response.status).toBe(200);
    return MemoryFactsGetResponse.parse(await response.json());
  }

  function findFact(facts: Fact[], content: string): Fact {
    const fact = facts.find((candidate) => candidate.content === content);
    if (!fact) throw new Error(`no fact "${content}" among ${JSON.stringify(facts)}`);
    return fact;
  }

  beforeAll(async () => {
    fixture = await startStackFixture();
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    fixture.fake.onChat((request) =>
      isExtractionRequest(request) ? { content: answerExtraction(request) } : { content: 'Noted.' },
    );
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
  });

  describe('one user telling about their life, turn by turn', () => {
    let ana: string;
    let firstTurn: Turn;

    beforeAll(async () => {
      ana = await newUser('ana');
    });

    it('adds the facts a turn reveals, with the two messages of the turn as provenance', async () => {
      answerExtraction = () =>
        answer(add('The user moved to Porto last month.'), add('The user works as a nurse.', 7));
      const calls = extractionCalls().length;

      firstTurn = await turn(ana, 'I moved to Porto last month and I work as a nurse');
      const extraction = await extractionOf(firstTurn.runId);

      expect(extraction.status).toBe('done');
      expect(extractionCalls()).toHaveLength(calls + 1);
      const request = extractionCalls().at(-1);
      expect(extractionPrompt(request)).toContain(
        'User: I moved to Porto last month and I work as a nurse',
      );
      expect(extractionPrompt(request)).toContain('Assistant: Noted.');
      const facts = await listFacts(ana);
      expect(facts.map((fact) => fact.content).sort()).toEqual([
        'The user moved to Porto last month.',
        'The user works as a nurse.',
      ]);
      for (const fact of facts) {
        expect(fact.sourceMessageIds).toEqual([firstTurn.userMessageId, firstTurn.replyMessageId]);
        expect(fact.validTo).toBeNull();
      }
      expect(findFact(facts, 'The user works as a nurse.').importance).toBe(7);
      expect(extraction.operations).toEqual([
        {
          op: 'add',
          factId: findFact(facts, 'The user moved to Porto last month.').id,
          content: 'The user moved to Porto last month.',
        },
        {
          op: 'add',
          factId: findFact(facts, 'The user works as a nurse.').id,
          content: 'The user works as a nurse.',
        },
      ]);
    });

    it('updates a fact the user corrects: the old version is closed and points to the new one', async () => {
      const porto = findFact(await listFacts(ana), 'The user moved to Porto last month.');
      answerExtraction = (request) =>
        answer({
          op: 'update',
          factId: shownFactId(request, /Porto/),
          content: 'The user moved to Braga last month.',
        });

      const correction = await turn(ana, 'Actually I moved to Braga');
      const extraction = await extractionOf(correction.runId);

      expect(extraction.status).toBe('done');
      expect(extractionPrompt(extractionCalls().at(-1))).toContain(
        `[id ${porto.id}] The user moved to Porto last month.`,
      );
      const facts = await listFacts(ana);
      expect(facts.map((fact) => fact.content).sort()).toEqual([
        'The user moved to Braga last month.',
        'The user works as a nurse.',
      ]);
      const braga = findFact(facts, 'The user moved to Braga last month.');
      // Learnt from both turns.
      expect(braga.sourceMessageIds).toEqual([
        firstTurn.userMessageId,
        firstTurn.replyMessageId,
        correction.userMessageId,
        correction.replyMessageId,
      ]);
      const old = await getFact(ana, porto.id);
      expect(old.fact.validTo).not.toBeNull();
      expect(old.fact.supersededBy).toBe(braga.id);
      expect((await getFact(ana, braga.id)).history.map((fact) => fact.id)).toEqual([porto.id]);
      expect(extraction.operations).toEqual([
        {
          op: 'update',
          factId: porto.id,
          newFactId: braga.id,
          content: 'The user moved to Braga last month.',
        },
      ]);
    });

    it('invalidates a fact that is no longer true, keeping it in the history', async () => {
      const nurse = findFact(await listFacts(ana), 'The user works as a nurse.');
      answerExtraction = (request) =>
        answer({
          op: 'invalidate',
          factId: shownFactId(request, /nurse/),
          reason: 'the user quit',
        });

      const quit = await turn(ana, 'I quit my job as a nurse last week');
      const extraction = await extractionOf(quit.runId);

      expect(extraction.operations).toEqual([
        // The closed fact's words, for the Learned view.
        { op: 'invalidate', factId: nurse.id, content: nurse.content, reason: 'the user quit' },
      ]);
      const closed = await getFact(ana, nurse.id);
      expect(closed.fact.validTo).not.toBeNull();
      expect(closed.fact.supersededBy).toBeNull();
      expect((await listFacts(ana)).map((fact) => fact.content)).toEqual([
        'The user moved to Braga last month.',
      ]);
      const everything = await listFacts(ana, '?includeInvalid=true');
      expect(everything.map((fact) => fact.id)).toContain(nurse.id);
    });

    it('asks no model when every word of the message is already known', async () => {
      const calls = extractionCalls().length;

      const repeat = await turn(ana, 'I moved to Braga last month');

      expect(await extractionOf(repeat.runId)).toEqual({
        status: 'skipped',
        operations: [],
        reason: 'nothing new',
      });
      expect(extractionCalls()).toHaveLength(calls);
    });
  });

  it('adds nothing when the model finds nothing worth keeping', async () => {
    const ben = await newUser('ben');
    answerExtraction = () => answer({ op: 'noop' });
    const calls = extractionCalls().length;

    const chat = await turn(ben, 'I watched a documentary about volcanoes tonight');

    expect(await extractionOf(chat.runId)).toEqual({
      status: 'done',
      operations: [{ op: 'noop' }],
      reason: null,
    });
    expect(extractionCalls()).toHaveLength(calls + 1);
    expect(await listFacts(ben)).toEqual([]);
  });

  it('skips a turn too short to hold a fact without calling the model', async () => {
    const cleo = await newUser('cleo');
    const calls = extractionCalls().length;

    const thanks = await turn(cleo, 'ok thanks');

    expect(await extractionOf(thanks.runId)).toEqual({
      status: 'skipped',
      operations: [],
      reason: 'nothing new',
    });
    expect(extractionCalls()).toHaveLength(calls);
    expect(await listFacts(cleo)).toEqual([]);
  });

  it('asks again once after a malformed answer, naming the problem, and applies the valid one', async () => {
    const dan = await newUser('dan');
    const valid = answer(add('The user has a cat named Miso.'));
    let answered = 0;
    answerExtraction = () => {
      answered++;
      return answered === 1
        ? 'Sure! The user has a cat called Miso.'
        : `\`\`\`json\n${valid}\n\`\`\``;
    };
    const calls = extractionCalls().length;

    const chat = await turn(dan, 'My cat Miso turned five years old today');
    const extraction = await extractionOf(chat.runId);

    expect(extraction.status).toBe('done');
    expect(extractionCalls()).toHaveLength(calls + 2);
    const retry = sentMessages(extractionCalls().at(-1));
    expect(retry.slice(2)).toEqual([
      { role: 'assistant', content: 'Sure! The user has a cat called Miso.' },
      { role: 'user', content: expect.stringContaining('not valid JSON') },
    ]);
    expect((await listFacts(dan)).map((fact) => fact.content)).toEqual([
      'The user has a cat named Miso.',
    ]);
  });

  it('records a turn whose answers are malformed twice as failed, and goes on', async () => {
    const eve = await newUser('eve');
    answerExtraction = () => '{"operations": [{"op": "add", "content": "The user has a brother"}]}';
    const calls = extractionCalls().length;

    const chat = await turn(eve, 'My brother Tomas lives in Madrid with his wife');
    const extraction = await extractionOf(chat.runId);

    expect(extraction.status).toBe('failed');
    expect(extraction.reason).toContain('operations.0.category');
    expect(extraction.operations).toEqual([]);
    expect(extractionCalls()).toHaveLength(calls + 2);
    expect(await listFacts(eve)).toEqual([]);

    // The worker is still there for the next turn.
    answerExtraction = () => answer(add('The user is learning the cello.'));
    const next = await turn(eve, 'I started learning the cello this spring');
    expect((await extractionOf(next.runId)).status).toBe('done');
    expect((await listFacts(eve)).map((fact) => fact.content)).toEqual([
      'The user is learning the cello.',
    ]);
  });

  it('ignores an update or invalidation of a fact the model was not shown', async () => {
    const fred = await newUser('fred');
    const gina = await newUser('gina');
    const created = await call('POST', '/v1/memory/facts', gina, {
      content: "Gina's favourite tea is sencha.",
    });
    expect(created.status).toBe(201);
    const ginasFact = MemoryFactsRememberResponse.parse(await created.json()).fact;
    const unknownId = randomUUID();
    answerExtraction = () =>
      answer(
        { op: 'update', factId: ginasFact.id, content: 'Fred took over the tea.' },
        { op: 'invalidate', factId: unknownId },
      );

    const chat = await turn(fred, 'I booked a dentist appointment for Friday morning');
    const extraction = await extractionOf(chat.runId);

    expect(extraction).toEqual({
      status: 'done',
      operations: [
        {
          op: 'update',
          factId: ginasFact.id,
          content: 'Fred took over the tea.',
          ignored: 'not one of the facts shown',
        },
        { op: 'invalidate', factId: unknownId, ignored: 'not one of the facts shown' },
      ],
      reason: null,
    });
    expect(await listFacts(fred)).toEqual([]);
    expect(await getFact(gina, ginasFact.id)).toMatchObject({
      fact: { content: "Gina's favourite tea is sencha.", validTo: null, supersededBy: null },
      history: [],
    });
  });

  it('stores "remember that …" at once, with no extraction call needed for it', async () => {
    const hugo = await newUser('hugo');
    const calls = extractionCalls().length;

    const chat = await turn(hugo, 'remember that my passport expires in May 2027');
    const facts = await waitFor(
      async () => {
        const listed = await listFacts(hugo);
        return listed.length > 0 ? listed : undefined;
      },
      { timeoutMs: 3_000, what: 'the remembered fact' },
    );

    expect(facts).toMatchObject([
      {
        content: 'my passport expires in May 2027',
        category: 'fact',
        importance: 7,
        sourceMessageIds: [chat.userMessageId],
      },
    ]);
    // The stored fact already holds everything the message says.
    expect(await extractionOf(chat.runId)).toMatchObject({
      status: 'skipped',
      reason: 'nothing new',
    });
    expect(extractionCalls()).toHaveLength(calls);
    expect(await listFacts(hugo)).toHaveLength(1);
  });

  it('never stores a recalled memory again as a new fact', async () => {
    const iris = await newUser('iris');
    const created = await call('POST', '/v1/memory/facts', iris, {
      content: "The user's sister Marta lives in Lisbon.",
    });
    expect(created.status).toBe(201);
    const marta = MemoryFactsRememberResponse.parse(await created.json()).fact;
    // A careless model proposes the very fact the prompt recalled.
    answerExtraction = () => answer(add("The user's sister Marta lives in Lisbon."));

    const question = await turn(iris, 'Where does my sister Marta live these days?');
    const extraction = await extractionOf(question.runId);

    expect(recalledSection(extractionCalls().at(-1))).toContain(
      "The user's sister Marta lives in Lisbon.",
    );
    expect(extraction.operations).toEqual([
      { op: 'add', content: "The user's sister Marta lives in Lisbon.", ignored: 'already known' },
    ]);
    expect((await listFacts(iris)).map((fact) => fact.id)).toEqual([marta.id]);
  });

  it('undoes a wrong extraction from the API: its fact leaves GET /v1/memory/facts', async () => {
    const jan = await newUser('jan');
    // The model takes the neighbour's boat for the user's.
    answerExtraction = () => answer(add('The user owns a sailing boat called Freya.'));
    const chat = await turn(jan, 'My neighbour owns a sailing boat called Freya');
    await extractionOf(chat.runId);
    const [wrong] = await listFacts(jan);
    expect(wrong?.content).toBe('The user owns a sailing boat called Freya.');

    const listed = await call('GET', '/v1/memory/extractions', jan);
    expect(listed.status).toBe(200);
    expect(MemoryExtractionsListResponse.parse(await listed.json())).toEqual({
      extractions: [
        {
          id: chat.runId,
          turnId: expect.any(String),
          createdAt: expect.any(String),
          undoneAt: null,
          changes: [{ op: 'add', factId: wrong?.id, text: wrong?.content }],
        },
      ],
    });
    expect((await call('POST', `/v1/memory/extractions/${chat.runId}/undo`, jan)).status).toBe(200);

    expect(await listFacts(jan)).toEqual([]);
    expect((await getFact(jan, wrong?.id ?? '')).fact.validTo).not.toBeNull();
    expect((await call('POST', `/v1/memory/extractions/${chat.runId}/undo`, jan)).status).toBe(409);
    const other = await newUser('kai');
    expect((await call('POST', `/v1/memory/extractions/${chat.runId}/undo`, other)).status).toBe(
      404,
    );
  });
});
