import type { ExtractionRequested } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { findLiveFile } from '../repositories/files-repository';
import type { TurnTexts } from './extract-facts';
import { writeFile } from './files-service';

// Long enough to say what the turn was about; the messages themselves stay in the conversation.
const EXCERPT_CHARS = 1_500;

function excerpt(text: string): string {
  return text.length > EXCERPT_CHARS ? `${text.slice(0, EXCERPT_CHARS)}…` : text;
}

// Episodic memory: a record of each agent run under episodes/YYYY-MM-DD/, searchable like any
// memory file. Written once per run: it is named after the reply's time, not the job's, so a
// redelivered job finds it there however much later it comes.
export async function writeEpisode(
  pool: Pool,
  run: ExtractionRequested,
  turn: TurnTexts,
): Promise<void> {
  const stamp = turn.reply.createdAt.toISOString();
  const path = `episodes/${stamp.slice(0, 10)}/${stamp.slice(11, 16).replace(':', '')}-${run.runId.slice(0, 8)}.md`;
  if (await findLiveFile(pool, run.userId, path)) return;
  const content = [
    `# Run ${run.runId}`,
    '',
    `- when: ${stamp.slice(0, 16).replace('T', ' ')} UTC`,
    `- conversation: ${run.conversationId}`,
    '',
    '## The user asked',
    excerpt(turn.request.content),
    '',
    '## Jarvis answered',
    excerpt(turn.reply.content),
    '',
  ].join('\n');
  await writeFile(pool, {
    userId: run.userId,
    path,
    content,
    tags: ['episode'],
    metadata: { runId: run.runId, turnId: run.turnId, conversationId: run.conversationId },
  });
}
