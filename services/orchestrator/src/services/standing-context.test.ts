import { randomUUID } from 'node:crypto';
import {
  memoryFactsRemember,
  memoryFilesWrite,
  memoryInstructionsPut,
  TurnSubmitRequest,
} from '@jarvis/contracts';
import { type FakeLlmRequest, sentMessages } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createMemoryTools } from '../tools/memory-tools';
import { startTurnFixture, type TurnFixture } from '../turn-fixture';
import { runTurn } from './run-turn';
import { submitTurn } from './submit-turn';

// The standing context as the memory service itself answers it (memory and the model gateway as
// their own processes, the test kit's fake LLM behind the gateway): what a user set is in the
// prompt the model gets.
let turns: TurnFixture;

beforeAll(async () => {
  turns = await startTurnFixture();
  turns.deps.tools = createMemoryTools(turns.fixture.bus, new Set());
});

afterAll(async () => {
  await turns?.stop();
});

async function chat(userId: string, message: string): Promise<void> {
  const request = TurnSubmitRequest.parse({ userId, turnId: randomUUID(), message });
  const submitted = await submitTurn(turns.deps, request);
  expect(await runTurn(turns.deps, { ...submitted, userId, message }, 1)).toEqual({
    type: 'ack',
  });
}

const systemOf = (request: FakeLlmRequest | undefined) => sentMessages(request)[0]?.content ?? '';

// The turns' model calls, not the utility model's (fact extraction) that the same fake answers.
const lastTurnRequest = () =>
  turns.fake
    .chatRequests()
    .filter((request) => systemOf(request).startsWith('You are Jarvis'))
    .at(-1);

describe('the standing context from memory', () => {
  it(
    'shows the instructions, the rules and the skills index, and a skill loads on request',
    {
      timeout: 60_000,
    },
    async () => {
      const userId = randomUUID();
      const client = turns.fixture.client;
      await client.request(memoryInstructionsPut, { userId, text: 'Answer in English.' });
      await client.request(memoryFactsRemember, {
        userId,
        content: 'Always give distances in kilometres.',
        category: 'rule',
      });
      const procedure = 'Check the trains first, then the flights.';
      await client.request(memoryFilesWrite, {
        userId,
        path: 'skills/trip-planning.md',
        content: `---\nname: trip-planning\ndescription: How the user likes trips planned.\n---\n${procedure}\n`,
      });
      turns.fake.onChat((request) => {
        const messages = sentMessages(request);
        const last = messages.at(-1);
        if (last?.role === 'tool') return { content: 'Planned.' };
        return last?.content.includes('trip')
          ? {
              toolCalls: [{ id: 'load', name: 'skill_load', arguments: { name: 'trip-planning' } }],
            }
          : { content: 'Hello.' };
      });

      await chat(userId, 'Hello there.');

      const first = lastTurnRequest();
      const system = systemOf(first);
      expect(system).toContain(
        'Standing instructions from the user (always follow them):\nAnswer in English.\n- Always give distances in kilometres.',
      );
      expect(system).toContain(
        'Skills you can load with skill_load (name: description):\n- trip-planning: How the user likes trips planned.',
      );
      expect(JSON.stringify(sentMessages(first))).not.toContain(procedure);

      await chat(userId, 'Plan my trip to Bergen.');

      const afterLoad = sentMessages(lastTurnRequest());
      expect(afterLoad.at(-1)?.role).toBe('tool');
      expect(afterLoad.at(-1)?.content).toContain(procedure);
    },
  );
});
