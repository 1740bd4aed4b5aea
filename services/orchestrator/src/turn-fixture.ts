import { ensureUserEventStream } from '@jarvis/bus';
import { createLogger, type Metrics } from '@jarvis/telemetry';
import { type FakeLlm, startFakeLlm } from '@jarvis/testkit';
import { createAgentMetrics } from './services/agent-metrics';
import { watchTurnCancellations } from './services/cancel-turn';
import { watchChatRoute } from './services/chat-route';
import type { TurnDeps } from './services/run-turn';
import { ensureTurnQueue, type ServicesFixture, startServicesFixture } from './services-fixture';
import type { AgentTool } from './tools/agent-tool';

export type TurnFixture = {
  // The LLM behind the model gateway: each test says how it answers.
  fake: FakeLlm;
  fixture: ServicesFixture;
  // What the turn worker gives submitTurn and runTurn in main.ts.
  deps: TurnDeps;
  stop(): Promise<void>;
};

type TurnFixtureOptions = {
  // The tools the model may call; none unless given.
  tools?: AgentTool[];
  // The registry the turns are counted on; uncounted without it.
  metrics?: Metrics;
};

// Real turns run in the test process: memory and the model gateway as their own processes
// (services-fixture.ts), the test kit's fake LLM behind the gateway, the turn queue and the user
// event stream made as main.ts makes them.
export async function startTurnFixture(options: TurnFixtureOptions = {}): Promise<TurnFixture> {
  const fake = await startFakeLlm();
  let fixture: ServicesFixture;
  try {
    fixture = await startServicesFixture(['memory', 'model-gateway'], {
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'test-key',
      MODEL_ROUTE_CHAT: 'openai/fake-chat',
      MODEL_ROUTE_UTILITY: 'openai/fake-chat',
      MODEL_ROUTE_EMBED: '',
    });
  } catch (error) {
    await fake.close();
    throw error;
  }
  const stop = async () => {
    await fixture.stop();
    await fake.close();
  };
  try {
    await ensureUserEventStream(fixture.bus);
    await ensureTurnQueue(fixture.bus);
  } catch (error) {
    await stop();
    throw error;
  }
  const logger = createLogger('orchestrator-test', 'silent');
  const deps: TurnDeps = {
    bus: fixture.bus,
    pool: fixture.db.pool,
    redis: fixture.redis,
    logger,
    contextTokenBudget: 8_000,
    historyLimit: 50,
    tools: options.tools ?? [],
    approvalTtlMs: 60_000,
    loop: {
      maxSteps: 6,
      toolTimeoutMs: 5_000,
      turnDeadlineMs: 30_000,
      toolResultMaxChars: 1_000,
      maxOutputTokens: 256,
      turnOutputTokenCap: 10_000,
      modelCallTimeoutMs: 15_000,
    },
    lockLeaseMs: 5_000,
    maxAttempts: 3,
    cancellations: watchTurnCancellations(fixture.bus, fixture.redis),
    chatRoute: watchChatRoute({ bus: fixture.bus, logger }),
    metrics: options.metrics && createAgentMetrics(options.metrics, fixture.db.pool, logger),
  };
  return { fake, fixture, deps, stop };
}

function tool(name: string, risk: AgentTool['risk'], run: AgentTool['run']): AgentTool {
  return {
    definition: {
      name,
      description: `the ${name} tool`,
      parameters: { type: 'object', properties: {} },
    },
    risk,
    run,
  };
}

// A tool that answers, one that fails, and one that waits for its user's approval.
export const SAMPLE_TOOLS: AgentTool[] = [
  tool('lookup', 'safe', async () => ({ found: 'it' })),
  tool('broken', 'safe', async () => {
    throw new Error('out of order');
  }),
  tool('send_money', 'risky', async () => ({ sent: true })),
];
