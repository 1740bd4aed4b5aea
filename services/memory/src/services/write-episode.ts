import type { Bus } from '@jarvis/bus';
import type { ExtractionRequested } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { z } from 'zod';
import { findLiveFile } from '../repositories/files-repository';
import type { TurnTexts } from './extract-facts';
import { writeFile } from './files-service';
import { askUtilityModel, readJsonAnswer, type UtilityModelSettings } from './utility-model';

// Long enough to say what the turn was about; the messages themselves stay in the conversation.
const EXCERPT_CHARS = 1_500;
// What the model reads of each message: the episode summarises, it does not copy.
const PROMPT_MESSAGE_CHARS = 4_000;
// Each part of the summary stays short, so an episode stays well under the ~3,100 characters
// that the weekly roll-up reads of one (roll-up-episodes.ts).
const TITLE_MAX_CHARS = 120;
const SECTION_MAX_CHARS = 500;
const TOPICS_MAX = 6;
const OPEN_LOOPS_MAX = 5;
const LOOP_MAX_CHARS = 200;

const INSTRUCTIONS = `You keep the episodic memory of a personal assistant. From one turn of a conversation (what the user asked and what the assistant answered), write a short record that will let the assistant recall this episode months later:
- title: a few words naming what the turn was about;
- topics: its subjects, at most ${TOPICS_MAX}, a word or two each;
- asked: what the user asked for, in a sentence or two;
- done: what the assistant did or answered, in a sentence or two;
- outcome: how it ended (found out, decided, done, failed), in a sentence;
- openLoops: what is still to do or to answer, if anything, one short line each.
Keep names, dates and numbers. Say nothing the turn does not say.
Answer with only this JSON object: {"title": "...", "topics": ["..."], "asked": "...", "done": "...", "outcome": "...", "openLoops": ["..."]}`;

const EpisodeSummary = z.object({
  title: z.string().trim().min(1),
  topics: z.array(z.string().trim().min(1)),
  asked: z.string().trim(),
  done: z.string().trim(),
  outcome: z.string().trim(),
  openLoops: z.array(z.string().trim().min(1)),
});
type EpisodeSummary = z.infer<typeof EpisodeSummary>;

function excerpt(text: string, maxChars = EXCERPT_CHARS): string {
  return text.length > maxChars ? `${text.slice(0, maxChars)}…` : text;
}

// One line of front matter: no line break can end it early.
function oneLine(text: string, maxChars: number): string {
  return excerpt(text.replace(/\s+/g, ' ').trim(), maxChars);
}

// Episodic memory: a record of each agent run under episodes/YYYY-MM-DD/, searchable and recalled
// like any memory file. The utility model summarises the turn; when it does not answer, the record
// holds excerpts of the two messages instead. Written once per run: it is named after the reply's
// time, not the job's, so a redelivered job finds it there however much later it comes.
export async function writeEpisode(
  bus: Bus,
  pool: Pool,
  settings: UtilityModelSettings,
  run: ExtractionRequested,
  turn: TurnTexts,
): Promise<void> {
  const stamp = turn.reply.createdAt.toISOString();
  const path = `episodes/${stamp.slice(0, 10)}/${stamp.slice(11, 16).replace(':', '')}-${run.runId.slice(0, 8)}.md`;
  if (await findLiveFile(pool, run.userId, path)) return;
  const summary = await summariseTurn(bus, settings, run, turn);
  const when = `${stamp.slice(0, 16).replace('T', ' ')} UTC`;
  await writeFile(pool, {
    userId: run.userId,
    path,
    content: summary ? renderSummary(run, when, summary) : renderExcerpt(run, when, turn),
    tags: ['episode'],
    metadata: { runId: run.runId, turnId: run.turnId, conversationId: run.conversationId },
  });
}

// Undefined when the model is down or its answer is unusable: the episode is still written, and
// the job's fact extraction, which asks the same model, decides whether to try again.
async function summariseTurn(
  bus: Bus,
  settings: UtilityModelSettings,
  run: ExtractionRequested,
  turn: TurnTexts,
): Promise<EpisodeSummary | undefined> {
  try {
    const answer = await askUtilityModel(bus, settings, run.userId, [
      { role: 'system', content: INSTRUCTIONS },
      {
        role: 'user',
        content: `User: ${excerpt(turn.request.content, PROMPT_MESSAGE_CHARS)}\n\nAssistant: ${excerpt(turn.reply.content, PROMPT_MESSAGE_CHARS)}`,
      },
    ]);
    const parsed = EpisodeSummary.safeParse(readJsonAnswer(answer));
    return parsed.success ? parsed.data : undefined;
  } catch (error) {
    bus.logger.warn({ err: error, runId: run.runId }, 'episode written without a summary');
    return undefined;
  }
}

function renderSummary(run: ExtractionRequested, when: string, summary: EpisodeSummary): string {
  const title = oneLine(summary.title, TITLE_MAX_CHARS);
  const topics = summary.topics.slice(0, TOPICS_MAX).map((topic) => oneLine(topic, 60));
  const openLoops = summary.openLoops.slice(0, OPEN_LOOPS_MAX);
  return [
    '---',
    `title: ${JSON.stringify(title)}`,
    `topics: ${JSON.stringify(topics)}`,
    '---',
    `# ${title}`,
    '',
    `- when: ${when}`,
    `- conversation: ${run.conversationId}`,
    `- run: ${run.runId}`,
    '',
    '## Asked',
    excerpt(summary.asked, SECTION_MAX_CHARS),
    '',
    '## Done',
    excerpt(summary.done, SECTION_MAX_CHARS),
    '',
    '## Outcome',
    excerpt(summary.outcome, SECTION_MAX_CHARS),
    '',
    '## Open loops',
    ...(openLoops.length > 0
      ? openLoops.map((loop) => `- ${oneLine(loop, LOOP_MAX_CHARS)}`)
      : ['(none)']),
    '',
  ].join('\n');
}

function renderExcerpt(run: ExtractionRequested, when: string, turn: TurnTexts): string {
  return [
    `# Run ${run.runId}`,
    '',
    `- when: ${when}`,
    `- conversation: ${run.conversationId}`,
    '',
    '## The user asked',
    excerpt(turn.request.content),
    '',
    '## Jarvis answered',
    excerpt(turn.reply.content),
    '',
  ].join('\n');
}
