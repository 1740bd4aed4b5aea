import type { Pool } from '@jarvis/db';
import {
  finishRuns,
  type RunFinish,
  type RunOutcome,
  type RunRecord,
} from '../repositories/runs-repository';

// Marks delivered runs finished, many in one statement: the runs that finish while a write is
// under way are written together by the next one. A burst of reminders otherwise cost a statement
// and a commit each after its delivery. DataLoader batches what is asked within one tick only; a
// write in flight is what gathers the next batch here.

// Runs per statement.
const MAX_BATCH = 500;

type Waiting = RunFinish & {
  resolve: (run: RunRecord | undefined) => void;
  reject: (error: unknown) => void;
};

export type RunFinisher = {
  // The run as finished, or undefined when it was no longer running (finished by another
  // delivery of it). Resolves once written.
  finish(id: string, outcome: RunOutcome, finishedAt: Date): Promise<RunRecord | undefined>;
};

export function createRunFinisher(pool: Pool): RunFinisher {
  const waiting: Waiting[] = [];
  let isWriting = false;

  const writeAll = async () => {
    isWriting = true;
    // Finishes of the same moment (one socket read's replies) join the first write too.
    await new Promise((resolve) => setImmediate(resolve));
    while (waiting.length > 0) {
      const batch = waiting.splice(0, MAX_BATCH);
      try {
        const finished = new Map((await finishRuns(pool, batch)).map((run) => [run.id, run]));
        for (const entry of batch) entry.resolve(finished.get(entry.id));
      } catch (error) {
        for (const entry of batch) entry.reject(error);
      }
    }
    isWriting = false;
  };

  return {
    finish(id, outcome, finishedAt) {
      return new Promise((resolve, reject) => {
        waiting.push({ id, outcome, finishedAt, resolve, reject });
        if (!isWriting) void writeAll();
      });
    },
  };
}
