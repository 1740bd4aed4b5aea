import type { ChatMessage, RecalledItem, RecalledSummary, StoredMessage } from '@jarvis/contracts';

// What a prompt shows of memory: recall's parts as fitted to the budget (context-budget.ts).
export type PromptContext = {
  profile: { id: string; content: string }[];
  relevant: RecalledItem[];
  summaries: RecalledSummary[];
  recent: StoredMessage[];
};

const PERSONA =
  'You are Jarvis, a personal assistant in one long, continuous conversation with your user. ' +
  'Use what they told you earlier in the conversation. Be concise and direct.';

function day(iso: string): string {
  return iso.slice(0, 10);
}

type Remembered = {
  kind: string;
  createdAt: string;
  text: string;
  title?: string | undefined;
  page?: number | undefined;
};

// One remembered item as a line of a prompt: its date and kind, and a document chunk's title and
// page, so the answer can say where it read it: `- [2026-11-20, document "Manual", page 4] …`.
export function memoryLine(item: Remembered): string {
  const cited =
    item.title === undefined
      ? ''
      : item.page === undefined
        ? ` "${item.title}"`
        : ` "${item.title}", page ${item.page}`;
  return `- [${day(item.createdAt)}, ${item.kind}${cited}] ${item.text}`;
}

// A memory.search result's document title and page, which it keeps in its metadata (recall
// gives them as fields).
export function citationOf(result: { kind: string; metadata: Record<string, unknown> }): {
  title?: string;
  page?: number;
} {
  const { title, page } = result.metadata;
  if (result.kind !== 'document' || typeof title !== 'string') return {};
  return typeof page === 'number' ? { title, page } : { title };
}

// System prompt (persona, date, what memory recalled), then the recent conversation as the model
// should see it. Recalled memories carry their dates: "last Tuesday" in a memory is relative to
// when it was said, not to today.
export function buildPrompt(recall: PromptContext, now: Date, timeZone = 'UTC'): ChatMessage[] {
  const sections = [`${PERSONA}\nCurrent date and time: ${describeNow(now, timeZone)}.`];
  if (recall.profile.length > 0) {
    sections.push(
      `What you know about the user:\n${recall.profile.map((fact) => `- ${fact.content}`).join('\n')}`,
    );
  }
  if (recall.summaries.length > 0) {
    const lines = recall.summaries.map(
      (summary) => `(${day(summary.fromAt)} to ${day(summary.toAt)}) ${summary.content}`,
    );
    sections.push(`Earlier in this conversation, in summary:\n${lines.join('\n')}`);
  }
  if (recall.relevant.length > 0) {
    const lines = recall.relevant.map(memoryLine);
    sections.push(`Memories that may be relevant:\n${lines.join('\n')}`);
  }
  const history = recall.recent.flatMap((message): ChatMessage[] =>
    message.role === 'user' || message.role === 'assistant'
      ? [{ role: message.role, content: message.content }]
      : [],
  );
  return [{ role: 'system', content: sections.join('\n\n') }, ...history];
}

// Building an Intl.DateTimeFormat costs about a quarter of a millisecond, and every turn
// describes its time twice (sizing the prompt, then writing it): the two formatters of each time
// zone are built once. Names are validated IANA zones, but their case varies ("europe/oslo"), so
// the cache is bounded.
const FORMATTERS_MAX = 64;
const formatters = new Map<string, { local: Intl.DateTimeFormat; offset: Intl.DateTimeFormat }>();

function formattersFor(timeZone: string) {
  let found = formatters.get(timeZone);
  if (!found) {
    if (formatters.size >= FORMATTERS_MAX) formatters.clear();
    found = {
      local: new Intl.DateTimeFormat('en-GB', { timeZone, dateStyle: 'full', timeStyle: 'short' }),
      offset: new Intl.DateTimeFormat('en-GB', { timeZone, timeZoneName: 'longOffset' }),
    };
    formatters.set(timeZone, found);
  }
  return found;
}

// "Sunday, 1 June 2025 at 14:34 (Europe/Oslo, GMT+02:00)": the user's own day and hour, which
// "today" and "this evening" in their messages mean.
export function describeNow(now: Date, timeZone: string): string {
  const { local, offset } = formattersFor(timeZone);
  const zoneName =
    offset.formatToParts(now).find((part) => part.type === 'timeZoneName')?.value ?? 'GMT';
  return `${local.format(now)} (${timeZone}, ${zoneName})`;
}
