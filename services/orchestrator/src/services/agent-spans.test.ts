import { randomUUID } from 'node:crypto';
import { TurnSubmitRequest } from '@jarvis/contracts';
import { createMetrics, startTelemetry, type Telemetry } from '@jarvis/telemetry';
import { type OtlpReceiver, type ReceivedSpan, startOtlpReceiver } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApproval, findLatestApproval } from '../repositories/approvals-repository';
import { SAMPLE_TOOLS, startTurnFixture, type TurnFixture } from '../turn-fixture';
import { runTurn } from './run-turn';
import { submitTurn } from './submit-turn';

// The orchestrator's spans of real turns (memory and the model gateway as their own processes,
// the test kit's fake LLM behind them), exported over OTLP/HTTP to a receiver in this process.
let receiver: OtlpReceiver;
let turns: TurnFixture;
let telemetry: Telemetry;

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  telemetry = startTelemetry({
    serviceName: 'orchestrator',
    otlpEndpoint: receiver.url,
    otlpProtocol: 'http/json',
  });
  turns = await startTurnFixture({ tools: SAMPLE_TOOLS, metrics: createMetrics('orchestrator') });
});

afterAll(async () => {
  await turns?.stop();
  await telemetry?.stop();
  await receiver?.close();
});

// Submits a message and runs its turn to its end (or pause), as the turn worker would.
async function runMessage(userId: string, message: string) {
  const request = TurnSubmitRequest.parse({ userId, turnId: randomUUID(), message });
  const submitted = await submitTurn(turns.deps, request);
  const outcome = await runTurn(turns.deps, { ...submitted, userId, message, stream: false }, 1);
  expect(outcome).toEqual({ type: 'ack' });
  return submitted;
}

// The trace of one of the run's invoke_agent spans (a turn resumed after an approval is traced
// apart from the start that paused), once `isComplete` holds for it.
async function traceOf(runId: string, isComplete: (trace: ReceivedSpan[]) => boolean) {
  const traceIn = (all: ReceivedSpan[]) => {
    for (const agent of all) {
      if (agent.name !== 'invoke_agent' || agent.attributes['jarvis.run.id'] !== runId) continue;
      const trace = all.filter((span) => span.traceId === agent.traceId);
      if (isComplete(trace)) return { agent, trace };
    }
    return undefined;
  };
  const found = traceIn(await receiver.waitForSpans((all) => traceIn(all) !== undefined));
  if (!found) throw new Error('the trace went away');
  return found;
}

const named = (trace: ReceivedSpan[], name: string) => trace.filter((span) => span.name === name);

describe('agent spans', { timeout: 60_000 }, () => {
  it('make an invoke_agent per turn, with its retrieval and each tool call under it', async () => {
    const userId = randomUUID();
    let calls = 0;
    turns.fake.onChat(() => {
      calls += 1;
      if (calls > 1) return { content: 'Found it.' };
      return {
        toolCalls: [
          { id: 'call-lookup', name: 'lookup', arguments: {} },
          { id: 'call-broken', name: 'broken', arguments: {} },
        ],
      };
    });

    const submitted = await runMessage(userId, 'Find it for me');

    const { agent, trace } = await traceOf(
      submitted.runId,
      (spans) => named(spans, 'execute_tool broken').length === 1,
    );
    expect(agent).toMatchObject({
      service: 'orchestrator',
      statusCode: 0,
      attributes: {
        'gen_ai.operation.name': 'invoke_agent',
        'gen_ai.agent.name': 'jarvis',
        'gen_ai.conversation.id': submitted.conversationId,
        'jarvis.run.id': submitted.runId,
        'jarvis.user.id': userId,
      },
    });
    expect(named(trace, 'retrieval')[0]).toMatchObject({
      parentSpanId: agent.spanId,
      attributes: {
        'gen_ai.operation.name': 'retrieval',
        'gen_ai.data_source.id': 'jarvis-memory',
        'jarvis.retrieval.items': 0,
        // The turn's own message is the one recent message.
        'jarvis.retrieval.recent': 1,
      },
    });
    expect(named(trace, 'execute_tool lookup')[0]).toMatchObject({
      parentSpanId: agent.spanId,
      statusCode: 0,
      attributes: {
        'gen_ai.operation.name': 'execute_tool',
        'gen_ai.tool.name': 'lookup',
        'gen_ai.tool.call.id': 'call-lookup',
        'gen_ai.tool.type': 'function',
        'jarvis.tool.status': 'ok',
      },
    });
    expect(named(trace, 'execute_tool broken')[0]).toMatchObject({
      parentSpanId: agent.spanId,
      statusCode: 2,
      attributes: {
        'gen_ai.tool.call.id': 'call-broken',
        'jarvis.tool.status': 'error',
        'error.type': 'tool_failed',
      },
    });
  });

  it('mark a call its user denied, in the trace of the resumed turn', async () => {
    const userId = randomUUID();
    turns.fake.onChat((request) =>
      JSON.stringify(request.body).includes('denied')
        ? { content: 'I did not send it.' }
        : { toolCalls: [{ name: 'send_money', arguments: { to: 'bob' } }] },
    );
    const submitted = await runMessage(userId, 'Send Bob the money');
    const approval = await findLatestApproval(turns.fixture.db.pool, submitted.runId);
    await decideApproval(turns.fixture.db.pool, userId, approval?.id ?? '', 'denied');

    const resumed = await runTurn(
      turns.deps,
      { ...submitted, userId, approvalId: approval?.id, stream: false },
      1,
    );

    expect(resumed).toEqual({ type: 'ack' });
    const { trace } = await traceOf(
      submitted.runId,
      (spans) => named(spans, 'execute_tool send_money').length === 1,
    );
    expect(named(trace, 'execute_tool send_money')[0]).toMatchObject({
      statusCode: 2,
      attributes: { 'jarvis.tool.status': 'denied', 'error.type': 'denied' },
    });
  });

  it('mark a turn whose model failed', async () => {
    turns.fake.onChat(() => ({ status: 400, errorMessage: 'no such thing' }));

    const submitted = await runMessage(randomUUID(), 'Ask the broken model');

    const { agent } = await traceOf(submitted.runId, () => true);
    expect(agent.statusCode).toBe(2);
    expect(agent.attributes['error.type']).toEqual(expect.any(String));
  });
});
