import { randomUUID } from 'node:crypto';
import { TurnSubmitRequest } from '@jarvis/contracts';
import { createMetrics, type Metrics, startTelemetry, type Telemetry } from '@jarvis/telemetry';
import { metricSample } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApproval, findLatestApproval } from '../repositories/approvals-repository';
import { SAMPLE_TOOLS, startTurnFixture, type TurnFixture } from '../turn-fixture';
import { runTurn } from './run-turn';
import { submitTurn } from './submit-turn';

// Real turns (memory and the model gateway as their own processes, the test kit's fake LLM
// behind them) counted on a registry of the test's own, read back as /metrics serves it.
let turns: TurnFixture;
let telemetry: Telemetry;
let metrics: Metrics;

beforeAll(async () => {
  // Spans get real trace ids, which the turn duration's exemplars carry.
  telemetry = startTelemetry({ serviceName: 'orchestrator-test' });
  metrics = createMetrics('orchestrator-test');
  turns = await startTurnFixture({ tools: SAMPLE_TOOLS, metrics });
});

afterAll(async () => {
  await turns?.stop();
  await telemetry?.stop();
});

// Submits a message and runs its turn to its end (or pause), as the turn worker would.
async function runMessage(userId: string, message: string, scheduleId?: string) {
  const request = TurnSubmitRequest.parse({ userId, turnId: randomUUID(), message, scheduleId });
  const submitted = await submitTurn(turns.deps, request);
  const outcome = await runTurn(turns.deps, { ...submitted, userId, message, stream: false }, 1);
  expect(outcome).toEqual({ type: 'ack' });
  return submitted;
}

// A sample's value in the registry's text (OpenMetrics, as /metrics serves it), by its name and
// exact labels (the service's added); undefined when the series is not there.
async function sample(name: string, labels: Record<string, string> = {}) {
  const text = await metrics.registry.metrics();
  return metricSample(text, name, { ...labels, service: 'orchestrator-test' });
}

describe('agent metrics', () => {
  it(
    'count a turn, its tool calls by status, its tokens and cost, and time it',
    {
      timeout: 60_000,
    },
    async () => {
      const userId = randomUUID();
      let calls = 0;
      turns.fake.onChat(() => {
        calls += 1;
        if (calls === 1) {
          return {
            toolCalls: [
              { name: 'lookup', arguments: {} },
              { name: 'broken', arguments: {} },
            ],
            usage: { inputTokens: 120, outputTokens: 30 },
          };
        }
        return { content: 'Found it.', usage: { inputTokens: 200, outputTokens: 7 } };
      });

      await runMessage(userId, 'Find it for me');

      expect(await sample('jarvis_turns_total', { kind: 'chat', outcome: 'completed' })).toBe(1);
      expect(await sample('jarvis_tool_calls_total', { tool: 'lookup', status: 'ok' })).toBe(1);
      expect(await sample('jarvis_tool_calls_total', { tool: 'broken', status: 'error' })).toBe(1);
      const model = { model: 'openai/fake-chat', user: userId };
      expect(await sample('jarvis_model_tokens_total', { ...model, type: 'input' })).toBe(320);
      expect(await sample('jarvis_model_tokens_total', { ...model, type: 'output' })).toBe(37);
      expect(await sample('jarvis_model_cost_usd_total', { ...model })).toBeGreaterThanOrEqual(0);
      expect(await sample('jarvis_turn_duration_seconds_count', { kind: 'chat' })).toBe(1);
      const total = await sample('jarvis_turn_duration_seconds_sum', { kind: 'chat' });
      const inModel = await sample('jarvis_turn_model_duration_seconds_sum', { kind: 'chat' });
      expect(inModel).toBeGreaterThan(0);
      expect(total).toBeGreaterThan(inModel ?? Number.POSITIVE_INFINITY);
      // The bucket the turn fell in keeps its trace id, for Grafana to link to.
      const text = await metrics.registry.metrics();
      expect(text).toMatch(
        /^jarvis_turn_duration_seconds_bucket\{[^}]*kind="chat"[^}]*\} 1 # \{trace_id="[0-9a-f]{32}"\} \S+ \S+$/m,
      );
    },
  );

  it('count guardrail trips, by kind of turn', { timeout: 60_000 }, async () => {
    // The model asks for the same call over and over: the loop stops it the third time.
    turns.fake.onChat(() => ({ toolCalls: [{ name: 'lookup', arguments: { what: 'again' } }] }));

    await runMessage(randomUUID(), 'Brief me on my day', randomUUID());

    expect(await sample('jarvis_guardrail_trips_total', { guardrail: 'repeated_call' })).toBe(1);
    expect(await sample('jarvis_turns_total', { kind: 'scheduled', outcome: 'completed' })).toBe(1);
  });

  it('gauge the approvals waiting, and count a denied call', { timeout: 60_000 }, async () => {
    const userId = randomUUID();
    turns.fake.onChat((request) =>
      JSON.stringify(request.body).includes('denied')
        ? { content: 'I did not send it.' }
        : { toolCalls: [{ name: 'send_money', arguments: { to: 'bob' } }] },
    );

    const submitted = await runMessage(userId, 'Send Bob the money');

    expect(await sample('jarvis_approvals_waiting')).toBe(1);
    // Paused, not ended: timed, not counted.
    expect(await sample('jarvis_turns_total', { kind: 'chat', outcome: 'completed' })).toBe(1);
    const approval = await findLatestApproval(turns.fixture.db.pool, submitted.runId);
    expect(approval).toBeDefined();
    await decideApproval(turns.fixture.db.pool, userId, approval?.id ?? '', 'denied');
    expect(await sample('jarvis_approvals_waiting')).toBe(0);

    const outcome = await runTurn(
      turns.deps,
      { ...submitted, userId, approvalId: approval?.id, stream: false },
      1,
    );

    expect(outcome).toEqual({ type: 'ack' });
    expect(await sample('jarvis_tool_calls_total', { tool: 'send_money', status: 'denied' })).toBe(
      1,
    );
    expect(await sample('jarvis_turns_total', { kind: 'chat', outcome: 'completed' })).toBe(2);
  });
});
