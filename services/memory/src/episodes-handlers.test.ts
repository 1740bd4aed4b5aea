import { randomUUID } from 'node:crypto';
import { catchBusError, sendRaw } from '@jarvis/bus/testing';
import {
  isoWeekBounds,
  isoWeekOf,
  memoryAppend,
  memoryEpisodesRollup,
  memoryEpisodesWeeksPending,
  memoryFilesRead,
  memoryFilesSearch,
  memoryFilesWrite,
  memorySearch,
} from '@jarvis/contracts';
import { type FakeLlmRequest, type FakeReply, sentMessages } from '@jarvis/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { registerEpisodeHandlers } from './episodes-handlers';
import { registerFileHandlers } from './files-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';
import { type ModelGatewayFixture, startModelGatewayFixture } from './model-gateway-fixture';
import { readTurn } from './services/extract-facts';
import { rollUpEpisodes } from './services/roll-up-episodes';
import { writeEpisode as writeRunEpisode } from './services/write-episode';

let memory: MemoryFixture;
let gateway: ModelGatewayFixture;

beforeAll(async () => {
  memory = await startMemoryFixture('episodes', [registerFileHandlers, registerEpisodeHandlers]);
  gateway = await startModelGatewayFixture(memory.clientBus.namespace, memory.db.url);
}, 120_000);

afterEach(() => {
  gateway.fake.reset();
});

afterAll(async () => {
  await gateway?.stop();
  await memory?.stop();
});

const SUMMARY = {
  title: 'Greenhouse plans and the tax return',
  topics: ['Building a greenhouse in the garden', 'Filing the tax return'],
  outcomes: ['Ordered polycarbonate panels on Wednesday', 'The tax return is still open'],
};

function summaryReply(answer: object = SUMMARY): FakeReply {
  return { content: JSON.stringify(answer) };
}

function rollUp(userId: string, week: string) {
  return memory.clientBus.request(memoryEpisodesRollup, { userId, week }, { timeoutMs: 30_000 });
}

// An episode file as the extraction worker writes it (write-episode.ts), at a day and time.
async function writeEpisode(userId: string, at: string, asked: string, answered = 'Noted.') {
  const path = `episodes/${at.slice(0, 10)}/${at.slice(11, 13)}${at.slice(14, 16)}-${randomUUID().slice(0, 8)}.md`;
  const content = [
    `# Run ${randomUUID()}`,
    '',
    `- when: ${at.slice(0, 16).replace('T', ' ')} UTC`,
    '',
    '## The user asked',
    asked,
    '',
    '## Jarvis answered',
    answered,
    '',
  ].join('\n');
  await memory.clientBus.request(memoryFilesWrite, { userId, path, content, tags: ['episode'] });
  return path;
}

async function readContent(userId: string, path: string): Promise<string> {
  const { file } = await memory.clientBus.request(memoryFilesRead, { userId, path });
  return file.content;
}

// What the model was asked: the roll-up's prompt, after the instructions.
function promptOf(request: FakeLlmRequest | undefined): string {
  return sentMessages(request).at(-1)?.content ?? '';
}

function linkOf(path: string): string {
  return `](../${path.slice('episodes/'.length)})`;
}

describe('memory.episodes.rollup', () => {
  it("summarises the week's episodes once, with a link to each, searchable; another week's and another user's stay out", async () => {
    const userId = randomUUID();
    const other = randomUUID();
    const inWeek = [
      await writeEpisode(userId, '2025-03-03T00:00', 'Which panels suit a small greenhouse?'),
      await writeEpisode(userId, '2025-03-05T14:30', 'Order the polycarbonate panels, please.'),
      await writeEpisode(userId, '2025-03-09T23:59', 'Remind me about the tax return.'),
    ];
    const before = await writeEpisode(userId, '2025-03-02T23:59', 'Sunday before: marmalade.');
    const after = await writeEpisode(userId, '2025-03-10T00:00', 'Monday after: crossword.');
    await writeEpisode(other, '2025-03-04T10:00', 'Book the zeppelin ride for Anna.');
    gateway.fake.script(summaryReply());

    const first = await rollUp(userId, '2025-W10');

    expect(first).toEqual({
      path: 'episodes/weeks/2025-W10.md',
      status: 'written',
      episodeCount: 3,
    });
    const [request, ...more] = gateway.fake.chatRequests();
    expect(more).toHaveLength(0);
    const prompt = promptOf(request);
    for (const text of ['small greenhouse', 'polycarbonate panels', 'tax return']) {
      expect(prompt).toContain(text);
    }
    for (const text of ['marmalade', 'crossword', 'zeppelin']) expect(prompt).not.toContain(text);
    const content = await readContent(userId, first.path);
    expect(content).toContain(`# Week 2025-W10: ${SUMMARY.title}`);
    expect(content).toContain('2025-03-03 to 2025-03-09');
    for (const line of [...SUMMARY.topics, ...SUMMARY.outcomes]) {
      expect(content).toContain(`- ${line}`);
    }
    for (const path of inWeek) expect(content).toContain(linkOf(path));
    for (const path of [before, after]) expect(content).not.toContain(linkOf(path));

    const again = await rollUp(userId, '2025-W10');

    expect(again).toEqual({ ...first, status: 'exists' });
    expect(gateway.fake.chatRequests()).toHaveLength(1);
    const { file } = await memory.clientBus.request(memoryFilesRead, {
      userId,
      path: first.path,
    });
    expect(file.version).toBe(1);

    const found = await memory.clientBus.request(memoryFilesSearch, {
      userId,
      query: 'polycarbonate',
    });
    expect(found.results.map((hit) => hit.path)).toContain(first.path);
    const searched = await memory.clientBus.request(memorySearch, {
      userId,
      query: 'greenhouse plans',
    });
    expect(searched.results.map((result) => result.metadata.path)).toContain(first.path);
    const theirs = await memory.clientBus.request(memoryFilesSearch, {
      userId: other,
      query: 'polycarbonate',
    });
    expect(theirs.results).toEqual([]);
  });

  it("rolls up another user's week from their own episodes alone", async () => {
    const userId = randomUUID();
    const other = randomUUID();
    await writeEpisode(other, '2025-03-18T08:00', 'Plan the hike to Preikestolen.');
    const mine = await writeEpisode(userId, '2025-03-19T09:00', 'Find a recipe for saffron buns.');
    gateway.fake.script(summaryReply({ title: 'Baking', topics: ['Saffron buns'], outcomes: [] }));

    const result = await rollUp(userId, '2025-W12');

    expect(result).toMatchObject({ status: 'written', episodeCount: 1 });
    const prompt = promptOf(gateway.fake.chatRequests()[0]);
    expect(prompt).toContain('saffron buns');
    expect(prompt).not.toContain('Preikestolen');
    const content = await readContent(userId, result.path);
    expect(content).toContain(linkOf(mine));
    expect(content).not.toContain('Preikestolen');
    // An empty list is left out rather than shown as an empty section.
    expect(content).not.toContain('## Outcomes');
  });

  it('writes once when called twice at once: one call writes, the other finds it there', async () => {
    const userId = randomUUID();
    await writeEpisode(userId, '2025-04-01T10:00', 'Compare two bicycle helmets.');
    await writeEpisode(userId, '2025-04-03T18:45', 'Buy the blue helmet.');
    // Both calls are past their check for the file and waiting on the model before either writes.
    const holds = [gateway.fake.hold(), gateway.fake.hold()];
    gateway.fake.onChat(() => summaryReply());

    const calls = Promise.all([rollUp(userId, '2025-W14'), rollUp(userId, '2025-W14')]);
    await Promise.all(holds.map((hold) => hold.reached));
    for (const hold of holds) hold.release();
    const results = await calls;

    expect(results.map((result) => result.status).sort()).toEqual(['exists', 'written']);
    expect(results.map((result) => result.episodeCount)).toEqual([2, 2]);
    expect(
      await memory.countRows('SELECT count(*) FROM memory.files WHERE user_id = $1 AND path = $2', [
        userId,
        'episodes/weeks/2025-W14.md',
      ]),
    ).toBe(1);
    expect(
      await memory.countRows(
        `SELECT count(*) FROM memory.file_versions v JOIN memory.files f ON f.id = v.file_id
         WHERE f.user_id = $1`,
        [userId],
      ),
    ).toBe(0);
  });

  it('answers no_episodes for a week without episodes, writing nothing and asking no model', async () => {
    const userId = randomUUID();
    await writeEpisode(userId, '2025-04-13T12:00', 'The Sunday before.');
    // Not episodes: the day folder's subfolder, and a file beside the day folders.
    await memory.clientBus.request(memoryFilesWrite, {
      userId,
      path: 'episodes/2025-04-15/drafts/note.md',
      content: 'a draft',
    });
    await memory.clientBus.request(memoryFilesWrite, {
      userId,
      path: 'episodes/2025-04-15.md',
      content: 'a day note',
    });

    const result = await rollUp(userId, '2025-W16');

    expect(result).toEqual({
      path: 'episodes/weeks/2025-W16.md',
      status: 'no_episodes',
      episodeCount: 0,
    });
    expect(gateway.fake.chatRequests()).toHaveLength(0);
    const error = await catchBusError(readContent(userId, result.path));
    expect(error.code).toBe('not_found');
  });

  it('refuses a week that is not an ISO week, at its edge', async () => {
    const userId = randomUUID();
    for (const week of ['2025-10', '2025-W1', '2025W10', '2025-w10', '2025-W00', '2021-W53', '']) {
      const reply = await sendRaw(memory.clientBus, memoryEpisodesRollup.subject, {
        userId,
        week,
      });
      expect(reply, week).toMatchObject({
        ok: false,
        error: { code: 'bad_request', message: expect.stringMatching(/^week: /) },
      });
    }
    // 2020 has 53 weeks: its last is a week like any other.
    gateway.fake.script(summaryReply());
    await writeEpisode(userId, '2020-12-31T20:00', 'New year plans.');
    expect(await rollUp(userId, '2020-W53')).toMatchObject({ status: 'written', episodeCount: 1 });
  });

  it('refuses a week that is not over yet in UTC, writing nothing', async () => {
    const userId = randomUUID();
    const now = new Date();
    await writeEpisode(userId, now.toISOString(), 'Something from this very week.');
    const thisWeek = isoWeekOf(now);
    const nextWeek = isoWeekOf(new Date(now.getTime() + 7 * 86_400_000));

    for (const week of [thisWeek, nextWeek]) {
      const error = await catchBusError(rollUp(userId, week));
      expect(error.code).toBe('bad_request');
      expect(error.message).toContain('is not over yet');
    }

    expect(gateway.fake.chatRequests()).toHaveLength(0);
    expect(
      await memory.countRows(
        "SELECT count(*) FROM memory.files WHERE user_id = $1 AND path LIKE 'episodes/weeks/%'",
        [userId],
      ),
    ).toBe(0);
  });

  it('answers unavailable while the model cannot answer, with nothing written; a later call writes', async () => {
    const userId = randomUUID();
    await writeEpisode(userId, '2025-05-06T07:00', 'Check the train times to Bergen.');
    gateway.fake.script({ status: 503, errorMessage: 'overloaded' });

    const error = await catchBusError(rollUp(userId, '2025-W19'));

    expect(error.code).toBe('unavailable');
    expect(
      await memory.countRows('SELECT count(*) FROM memory.files WHERE user_id = $1 AND path = $2', [
        userId,
        'episodes/weeks/2025-W19.md',
      ]),
    ).toBe(0);

    gateway.fake.script(summaryReply());
    expect(await rollUp(userId, '2025-W19')).toMatchObject({ status: 'written', episodeCount: 1 });
  });

  it('answers unavailable when the model does not answer in time', async () => {
    const userId = randomUUID();
    await writeEpisode(userId, '2025-05-13T07:00', 'Which ferry goes to Hirtshals?');
    gateway.fake.script({ ...summaryReply(), delayMs: 2_000 });

    const error = await catchBusError(
      rollUpEpisodes(
        memory.clientBus,
        memory.db.pool,
        { modelTimeoutMs: 300 },
        { userId, week: '2025-W20' },
      ),
    );

    expect(error.code).toBe('unavailable');
    expect(error.message).toContain('did not answer in time');
    expect(
      await memory.countRows('SELECT count(*) FROM memory.files WHERE user_id = $1 AND path = $2', [
        userId,
        'episodes/weeks/2025-W20.md',
      ]),
    ).toBe(0);
  });

  it('bounds what the model reads of a busy week, says what it left out, and links every episode', async () => {
    const userId = randomUUID();
    const paths: string[] = [];
    for (let index = 0; index < 75; index += 1) {
      const day = String(16 + Math.floor(index / 11)).padStart(2, '0');
      const minute = String(index % 60).padStart(2, '0');
      paths.push(
        await writeEpisode(
          userId,
          `2025-06-${day}T10:${minute}`,
          `Question ${index}: ${'about the allotment garden '.repeat(60)}`,
          'answer '.repeat(300),
        ),
      );
    }
    // A file the user wrote among the episodes, named as no episode is.
    await memory.clientBus.request(memoryFilesWrite, {
      userId,
      path: 'episodes/2025-06-18/odd [name] (draft.md',
      content: 'A note the user wrote.',
    });
    gateway.fake.script(summaryReply());

    const result = await rollUp(userId, '2025-W25');

    expect(result).toMatchObject({ status: 'written', episodeCount: 76 });
    const prompt = promptOf(gateway.fake.chatRequests()[0]);
    expect(prompt.length).toBeLessThan(28_000);
    expect(prompt).toContain('has 76 episodes. 60 of them, spread over the week');
    expect(prompt).toContain('16 are left out');
    // Spread over the week: its first and last days are both read.
    expect(prompt).toContain('episodes/2025-06-16/');
    expect(prompt).toContain('episodes/2025-06-22/');
    const content = await readContent(userId, result.path);
    for (const path of paths) expect(content).toContain(linkOf(path));
    expect(content).toContain('this summary read 60 of them');
    expect(content).toContain(
      '[2025-06-18 odd \\[name\\] (draft](../2025-06-18/odd%20%5Bname%5D%20%28draft.md)',
    );
  });
});

describe('episodes of runs', () => {
  const EPISODE = {
    title: 'Ferry to Hirtshals',
    topics: ['travel', 'ferries'],
    asked: 'Which ferry goes from Kristiansand to Hirtshals on Friday morning.',
    done: 'Looked up the Color Line timetable and listed the two morning sailings.',
    outcome: 'The user picked the 08:00 Superspeed sailing.',
    openLoops: ['Book a car slot on the ferry'],
  };

  // A finished turn, its reply stored at the given time, as the extraction job reads it.
  async function finishedTurn(userId: string, at: string) {
    const request = await memory.clientBus.request(memoryAppend, {
      userId,
      role: 'user',
      content: 'Which ferry goes to Hirtshals on Friday morning?',
    });
    const conversationId = request.message.conversationId;
    const reply = await memory.clientBus.request(memoryAppend, {
      userId,
      conversationId,
      role: 'assistant',
      content: 'Color Line sails at 08:00 (Superspeed) and 11:30 from Kristiansand.',
    });
    await memory.db.pool.query('UPDATE memory.messages SET created_at = $2 WHERE id = $1', [
      reply.message.id,
      at,
    ]);
    const job = {
      userId,
      conversationId,
      runId: randomUUID(),
      turnId: randomUUID(),
      userMessageId: request.message.id,
      replyMessageId: reply.message.id,
      recalledIds: [],
    };
    const turn = await readTurn(memory.db.pool, job);
    if (!turn) throw new Error('the turn was not found');
    return {
      job,
      turn,
      path: `episodes/${at.slice(0, 10)}/${at.slice(11, 13)}${at.slice(14, 16)}-${job.runId.slice(0, 8)}.md`,
    };
  }

  it('are summarised by the utility model, and the weekly roll-up reads the summary', async () => {
    const userId = randomUUID();
    const { job, turn, path } = await finishedTurn(userId, '2025-08-06T10:00:00.000Z');
    gateway.fake.script({ content: JSON.stringify(EPISODE) });

    await writeRunEpisode(memory.clientBus, memory.db.pool, { modelTimeoutMs: 10_000 }, job, turn);

    expect(promptOf(gateway.fake.chatRequests()[0])).toContain('Color Line sails at 08:00');
    const content = await readContent(userId, path);
    expect(content.split('\n').slice(0, 4)).toEqual([
      '---',
      'title: "Ferry to Hirtshals"',
      'topics: ["travel","ferries"]',
      '---',
    ]);
    for (const section of [
      `## Asked\n${EPISODE.asked}`,
      `## Done\n${EPISODE.done}`,
      `## Outcome\n${EPISODE.outcome}`,
      '## Open loops\n- Book a car slot on the ferry',
    ]) {
      expect(content).toContain(section);
    }

    gateway.fake.script(summaryReply());
    await rollUp(userId, isoWeekOf(new Date('2025-08-06T10:00:00Z')));
    const rollupPrompt = promptOf(gateway.fake.chatRequests()[1]);
    expect(rollupPrompt).toContain(path);
    expect(rollupPrompt).toContain(EPISODE.outcome);
  });

  it('hold excerpts of the two messages when the model answers no summary', async () => {
    const userId = randomUUID();
    const { job, turn, path } = await finishedTurn(userId, '2025-08-07T10:00:00.000Z');
    gateway.fake.script({ content: 'Here is a summary: it was about ferries.' });

    await writeRunEpisode(memory.clientBus, memory.db.pool, { modelTimeoutMs: 10_000 }, job, turn);

    const content = await readContent(userId, path);
    expect(content).toContain(
      '## The user asked\nWhich ferry goes to Hirtshals on Friday morning?',
    );
    expect(content).toContain('## Jarvis answered\nColor Line sails at 08:00');
  });
});

describe('memory.episodes.weeksPending', () => {
  it('lists the users with episodes in the week and no roll-up, a page at a time', async () => {
    const week = '2025-W30';
    const due = [randomUUID(), randomUUID(), randomUUID()].sort();
    for (const userId of due) await writeEpisode(userId, '2025-07-22T09:00', 'A July errand.');
    const otherWeek = randomUUID();
    await writeEpisode(otherWeek, '2025-07-28T09:00', 'The Monday after.');
    const rolledUp = randomUUID();
    await writeEpisode(rolledUp, '2025-07-23T09:00', 'Already summarised.');
    gateway.fake.script(summaryReply());
    await rollUp(rolledUp, week);

    const all = await memory.clientBus.request(memoryEpisodesWeeksPending, { week });
    const first = await memory.clientBus.request(memoryEpisodesWeeksPending, { week, limit: 2 });
    const second = await memory.clientBus.request(memoryEpisodesWeeksPending, {
      week,
      limit: 2,
      after: first.next,
    });

    expect(all).toEqual({ userIds: due });
    expect(first).toEqual({ userIds: due.slice(0, 2), next: due[1] });
    expect(second).toEqual({ userIds: due.slice(2) });

    gateway.fake.script(summaryReply());
    await rollUp(due[0] ?? '', week);
    const after = await memory.clientBus.request(memoryEpisodesWeeksPending, { week });
    expect(after).toEqual({ userIds: due.slice(1) });
  });

  it('refuses a week that is not an ISO week', async () => {
    const reply = await sendRaw(memory.clientBus, memoryEpisodesWeeksPending.subject, {
      week: '2025-W54',
    });
    expect(reply).toMatchObject({ ok: false, error: { code: 'bad_request' } });
  });
});

describe('ISO weeks', () => {
  it("agree with Postgres' ISO week for every day from 1990 to 2060", async () => {
    const { rows } = await memory.db.pool.query<{ day: string; week: string }>(
      `SELECT to_char(d, 'YYYY-MM-DD') AS day, to_char(d, 'IYYY-"W"IW') AS week
       FROM generate_series('1990-01-01'::date, '2060-12-31'::date, '1 day') AS d`,
    );
    const mismatches = rows.filter((row) => {
      const instant = new Date(`${row.day}T12:00:00Z`);
      const week = isoWeekOf(instant);
      const bounds = isoWeekBounds(week);
      return week !== row.week || !bounds || !(bounds.start <= instant && instant < bounds.end);
    });
    expect(rows.length).toBeGreaterThan(25_000);
    expect(mismatches).toEqual([]);
  });
});
