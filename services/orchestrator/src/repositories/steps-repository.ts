import { randomUUID } from 'node:crypto';
import type { RunStepKind } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';

export type NewStep = {
  kind: RunStepKind;
  name: string;
  status: 'ok' | 'error';
  input?: Record<string, unknown>;
  output?: Record<string, unknown>;
  error?: string;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
  startedAt: Date;
  durationMs: number;
};

export type StepTarget = { runId: string; userId: string; attempt: number };

export async function insertStep(
  db: Pool,
  target: StepTarget,
  seq: number,
  step: NewStep,
): Promise<void> {
  await db.query(
    `INSERT INTO orchestrator.run_steps
       (id, run_id, user_id, attempt, seq, kind, name, status, input, output, error,
        input_tokens, output_tokens, cost_usd, started_at, duration_ms)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
     ON CONFLICT (run_id, attempt, seq) DO NOTHING`,
    [
      randomUUID(),
      target.runId,
      target.userId,
      target.attempt,
      seq,
      step.kind,
      step.name,
      step.status,
      step.input ?? {},
      step.output ?? {},
      step.error ?? null,
      step.inputTokens ?? 0,
      step.outputTokens ?? 0,
      step.costUsd ?? 0,
      step.startedAt,
      Math.round(step.durationMs),
    ],
  );
}

// The run's totals and the makeup of its context, once it has answered.
export async function recordRunTotals(
  db: Pool,
  runId: string,
  totals: { context?: Record<string, unknown>; costUsd: number },
): Promise<void> {
  // A resumed run keeps the context its first attempt recorded.
  await db.query(
    'UPDATE orchestrator.runs SET context = coalesce($2, context), cost_usd = $3 WHERE id = $1',
    [runId, totals.context ?? null, totals.costUsd],
  );
}
