import { type Bus, BusError } from '@jarvis/bus';
import {
  isoWeekBounds,
  type MemoryEpisodesRollupResponse,
  type MemoryEpisodesWeeksPendingResponse,
  modelChat,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { z } from 'zod';
import {
  countEpisodes,
  type EpisodeDays,
  listEpisodePaths,
  listUsersWithoutRollup,
  readFileStarts,
} from '../repositories/episodes-repository';
import { findLiveFile } from '../repositories/files-repository';
import { createFileIfAbsent } from './files-service';

export type RollupSettings = {
  // Longest wait for the utility model's answer.
  modelTimeoutMs: number;
};

export const DEFAULT_ROLLUP: RollupSettings = { modelTimeoutMs: 120_000 };

// Links one roll-up lists (more are counted, not linked): an agent run every six minutes, day and
// night, still fits, in a file of about 120 kB.
const LINKED_EPISODES_MAX = 2_000;
// What the model reads of the week's episodes: about 6,000 tokens, a prompt a small local model
// reads in reasonable time.
const PROMPT_EPISODE_CHARS = 24_000;
// Each episode shown gets an equal share of that, within these bounds: less than the least says
// too little of a run to be worth its place, so a busy week shows fewer episodes instead; an
// episode file is about 3,100 characters at most (write-episode.ts).
const EPISODE_CHARS_MIN = 400;
const EPISODE_CHARS_MAX = 3_200;
const TITLE_MAX_CHARS = 120;
const LINE_MAX_CHARS = 300;
const LINES_MAX = 10;

const INSTRUCTIONS = `You write the weekly review in the memory of a personal assistant. You are given the episodes of one week: each is one run of the assistant, with what the user asked and what the assistant answered, some cut short. Write:
- title: a few words naming what the week was mostly about;
- topics: the main subjects of the week, at most 8, one short line each;
- outcomes: what came of them (decisions, things done or found out, plans, questions still open), at most 8, one short line each, with the day when it matters.
Keep names, dates and numbers. Say nothing the episodes do not say.
Answer with only this JSON object: {"title": "...", "topics": ["..."], "outcomes": ["..."]}`;

const RollupAnswer = z.object({
  title: z.string().min(1),
  topics: z.array(z.string()),
  outcomes: z.array(z.string()),
});
type RollupAnswer = z.infer<typeof RollupAnswer>;
const ROLLUP_ANSWER_SCHEMA = (() => {
  const { $schema: _, ...schema } = z.toJSONSchema(RollupAnswer);
  return schema;
})();

type Week = { week: string; start: Date; end: Date };

function rollupPath(week: string): string {
  return `episodes/weeks/${week}.md`;
}

function dayOf(instant: Date): string {
  return instant.toISOString().slice(0, 10);
}

function readWeek(week: string): Week {
  const bounds = isoWeekBounds(week);
  // The contract refuses such a week before it gets here.
  if (!bounds) throw new BusError('bad_request', `week: ${week} is not an ISO week`);
  return { week, ...bounds };
}

function episodeDays(week: Week): EpisodeDays {
  return { fromPath: `episodes/${dayOf(week.start)}/`, toPath: `episodes/${dayOf(week.end)}/` };
}

// The episodes the model reads, spread evenly over the week (paths are in time order), and how
// much of each: never more than PROMPT_EPISODE_CHARS in all.
export function pickEpisodesToShow<T>(episodes: T[]): { shown: T[]; charsEach: number } {
  const count = Math.min(episodes.length, Math.floor(PROMPT_EPISODE_CHARS / EPISODE_CHARS_MIN));
  if (count === 0) return { shown: [], charsEach: 0 };
  const shown = Array.from(
    { length: count },
    (_, index) => episodes[Math.floor((index * episodes.length) / count)],
  ).filter((episode): episode is T => episode !== undefined);
  return {
    shown,
    charsEach: Math.min(EPISODE_CHARS_MAX, Math.floor(PROMPT_EPISODE_CHARS / count)),
  };
}

function describeWeek(week: Week): string {
  const lastDay = new Date(week.end.getTime() - 1);
  return `${week.week} (${dayOf(week.start)} to ${dayOf(lastDay)}, UTC)`;
}

function promptOf(
  week: Week,
  total: number,
  shown: { path: string; text: string }[],
  charsEach: number,
): string {
  const leftOut = total - shown.length;
  const header =
    leftOut > 0
      ? `The week ${describeWeek(week)} has ${total} episodes. ${shown.length} of them, spread over the week, are shown below; ${leftOut} are left out.`
      : `The week ${describeWeek(week)} has ${total} episodes, all shown below.`;
  const episodes = shown.map((episode) => {
    const text =
      episode.text.length > charsEach ? `${episode.text.slice(0, charsEach)}…` : episode.text;
    return `=== ${episode.path} ===\n${text}`;
  });
  return [header, ...episodes].join('\n\n');
}

function oneLine(text: string, maxChars: number): string {
  const line = text.replace(/\s+/g, ' ').trim();
  return line.length > maxChars ? `${line.slice(0, maxChars - 1)}…` : line;
}

function bulletsOf(lines: string[]): string[] {
  return lines
    .map((line) => oneLine(line, LINE_MAX_CHARS))
    .filter((line) => line.length > 0)
    .slice(0, LINES_MAX)
    .map((line) => `- ${line}`);
}

// encodeURIComponent leaves ( and ) as they are, and an unmatched one ends a Markdown link.
function encodeLinkSegment(segment: string): string {
  return encodeURIComponent(segment).replace(/[()]/g, (c) => (c === '(' ? '%28' : '%29'));
}

// A link relative to episodes/weeks/, so it resolves in any Markdown viewer of the tree; the
// segments are escaped, as a file the user wrote there may have spaces or brackets in its name.
function linkTo(path: string): string {
  const [, day = '', name = ''] = path.split('/');
  const label = `${day} ${name.replace(/\.md$/, '')}`.replace(/[[\]\\]/g, '\\$&');
  return `- [${label}](../${encodeLinkSegment(day)}/${encodeLinkSegment(name)})`;
}

function rollupContent(
  week: Week,
  answer: RollupAnswer,
  episodes: { paths: string[]; total: number },
  shownCount: number,
): string {
  const unlisted = episodes.total - episodes.paths.length;
  const source =
    shownCount < episodes.total
      ? `${episodes.total} episodes; this summary read ${shownCount} of them, spread over the week.`
      : `${episodes.total} episodes.`;
  const section = (title: string, lines: string[]) =>
    lines.length > 0 ? [`## ${title}`, ...lines, ''] : [];
  return [
    `# Week ${week.week}: ${oneLine(answer.title, TITLE_MAX_CHARS)}`,
    '',
    `${describeWeek(week)}: ${source}`,
    '',
    ...section('Main topics', bulletsOf(answer.topics)),
    ...section('Outcomes', bulletsOf(answer.outcomes)),
    '## Episodes',
    ...episodes.paths.map(linkTo),
    ...(unlisted > 0 ? [`- … and ${unlisted} more, not listed here.`] : []),
    '',
  ].join('\n');
}

async function summariseWeek(
  bus: Bus,
  settings: RollupSettings,
  userId: string,
  prompt: string,
): Promise<RollupAnswer> {
  try {
    const answer = await bus.request(
      modelChat,
      {
        purpose: 'utility',
        userId,
        messages: [
          { role: 'system', content: INSTRUCTIONS },
          { role: 'user', content: prompt },
        ],
        responseFormat: {
          type: 'json_schema',
          name: 'weekly_rollup',
          schema: ROLLUP_ANSWER_SCHEMA,
        },
        temperature: 0,
      },
      { timeoutMs: settings.modelTimeoutMs },
    );
    const parsed = RollupAnswer.safeParse(answer.parsed);
    if (!parsed.success) {
      throw new BusError('unavailable', 'the utility model did not write a usable roll-up');
    }
    return parsed.data;
  } catch (error) {
    // A model that did not answer in time is one to ask again later, like one that is down.
    if (error instanceof BusError && error.code === 'timeout') {
      throw new BusError(
        'unavailable',
        `the utility model did not answer in time: ${error.message}`,
      );
    }
    throw error;
  }
}

// Writes the week's roll-up once. Nothing is written before the model has answered, so a failed
// call leaves nothing behind. Two calls at once may both ask the model; the file's unique live
// path lets one of them write, and the other answers `exists`.
export async function rollUpEpisodes(
  bus: Bus,
  pool: Pool,
  settings: RollupSettings,
  request: { userId: string; week: string },
  now = new Date(),
): Promise<MemoryEpisodesRollupResponse> {
  const week = readWeek(request.week);
  if (week.end > now) {
    throw new BusError(
      'bad_request',
      `week: ${week.week} is not over yet (it ends ${week.end.toISOString()}); only a finished week is rolled up`,
    );
  }
  const path = rollupPath(week.week);
  const days = episodeDays(week);
  if (await findLiveFile(pool, request.userId, path)) {
    return {
      path,
      status: 'exists',
      episodeCount: await countEpisodes(pool, request.userId, days),
    };
  }
  const episodes = await listEpisodePaths(pool, request.userId, days, LINKED_EPISODES_MAX);
  if (episodes.total === 0) return { path, status: 'no_episodes', episodeCount: 0 };
  const { shown, charsEach } = pickEpisodesToShow(episodes.paths);
  // One character more than shown tells a cut episode from one that fits.
  const texts = await readFileStarts(pool, request.userId, shown, charsEach + 1);
  const answer = await summariseWeek(
    bus,
    settings,
    request.userId,
    promptOf(week, episodes.total, texts, charsEach),
  );
  const isCreated = await createFileIfAbsent(pool, {
    userId: request.userId,
    path,
    content: rollupContent(week, answer, episodes, texts.length),
    tags: ['episode-week'],
    metadata: { week: week.week, episodeCount: episodes.total, summarisedCount: texts.length },
  });
  return { path, status: isCreated ? 'written' : 'exists', episodeCount: episodes.total };
}

export async function listUsersPendingRollup(
  pool: Pool,
  request: { week: string; after?: string | undefined; limit: number },
): Promise<MemoryEpisodesWeeksPendingResponse> {
  const week = readWeek(request.week);
  const userIds = await listUsersWithoutRollup(pool, {
    days: episodeDays(week),
    rollupPath: rollupPath(week.week),
    after: request.after,
    limit: request.limit + 1,
  });
  const page = userIds.slice(0, request.limit);
  const last = page.at(-1);
  return userIds.length > request.limit && last ? { userIds: page, next: last } : { userIds: page };
}
