import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError } from '@jarvis/bus/testing';
import {
  INSTRUCTIONS_TOKEN_CAP,
  memoryFactsRemember,
  memoryFactsUpdate,
  memoryInstructionsGet,
  memoryInstructionsPut,
} from '@jarvis/contracts';
import { estimateTokens } from '@jarvis/tokens';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFactHandlers } from './facts-handlers';
import { registerInstructionsHandlers } from './instructions-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';

let memory: MemoryFixture;
let clientBus: Bus;

beforeAll(async () => {
  memory = await startMemoryFixture('memory-instructions', [
    registerFactHandlers,
    registerInstructionsHandlers,
  ]);
  ({ clientBus } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

// About four characters a token: text of this many tokens.
function textOfTokens(tokens: number, word = 'metric'): string {
  return `${word} `.repeat(tokens * 4).slice(0, tokens * 4);
}

function put(userId: string, text: string) {
  return clientBus.request(memoryInstructionsPut, { userId, text });
}

function rule(userId: string, content: string) {
  return clientBus.request(memoryFactsRemember, { userId, content, category: 'rule' });
}

describe('memory.instructions', () => {
  it('answers empty instructions before any are written, then what was written', async () => {
    const userId = randomUUID();

    expect(await clientBus.request(memoryInstructionsGet, { userId })).toEqual({
      instructions: { text: '', tokens: 0, cap: INSTRUCTIONS_TOKEN_CAP, rulesTokens: 0 },
    });
    const text = 'Answer in Norwegian. Keep answers short.';
    const written = await put(userId, text);

    expect(written.instructions).toEqual({
      text,
      tokens: estimateTokens(text),
      cap: INSTRUCTIONS_TOKEN_CAP,
      rulesTokens: 0,
    });
    expect(await clientBus.request(memoryInstructionsGet, { userId })).toEqual(written);
    // Another user's are their own.
    expect(
      (await clientBus.request(memoryInstructionsGet, { userId: randomUUID() })).instructions.text,
    ).toBe('');
  });

  it('refuses text that passes the cap with the rules, naming the cap and the use, and keeps the old', async () => {
    const userId = randomUUID();
    await put(userId, 'Use metric units.');
    const ruleText = textOfTokens(400, 'always');
    await rule(userId, ruleText);

    const error = await catchBusError(put(userId, textOfTokens(700)));

    expect(error.code).toBe('bad_request');
    expect(error.message).toContain(`capped at ${INSTRUCTIONS_TOKEN_CAP} tokens`);
    expect(error.message).toContain(`${400 + estimateTokens('Use metric units.')} are in use`);
    const kept = await clientBus.request(memoryInstructionsGet, { userId });
    expect(kept.instructions).toMatchObject({ text: 'Use metric units.', rulesTokens: 400 });
    // Up to the cap exactly is fine.
    expect((await put(userId, textOfTokens(600))).instructions.tokens).toBe(600);
  });

  it('refuses a rule, or a change that makes one, past the cap; other facts are not capped', async () => {
    const userId = randomUUID();
    await put(userId, textOfTokens(900));
    const fitting = await rule(userId, textOfTokens(100, 'never'));
    expect(fitting.fact.category).toBe('rule');

    const error = await catchBusError(rule(userId, 'Always book aisle seats.'));
    expect(error.code).toBe('bad_request');
    expect(error.message).toContain('1000 are in use');
    const fact = await clientBus.request(memoryFactsRemember, {
      userId,
      content: 'Prefers aisle seats on long flights.',
      category: 'preference',
    });
    expect(
      (
        await catchBusError(
          clientBus.request(memoryFactsUpdate, { userId, id: fact.fact.id, category: 'rule' }),
        )
      ).code,
    ).toBe('bad_request');
    // A rule that shrinks frees what it took.
    const shorter = await clientBus.request(memoryFactsUpdate, {
      userId,
      id: fitting.fact.id,
      content: 'Never book flights before 9.',
    });
    expect(shorter.fact).toMatchObject({
      category: 'rule',
      content: 'Never book flights before 9.',
    });
  });
});
