import { BusError } from '@jarvis/bus';
import {
  type ExportRecord,
  INSTRUCTIONS_TOKEN_CAP,
  type InstructionsImport,
  type MemoryInstructionsGetRequest,
  type MemoryInstructionsPutRequest,
  type MemoryInstructionsResponse,
} from '@jarvis/contracts';
import { type Pool, type PoolClient, type Queryable, withTransaction } from '@jarvis/db';
import { estimateTokens } from '@jarvis/tokens';
import type { z } from 'zod';
import { lockUserFacts } from '../repositories/facts-repository';
import { findInstructions, saveInstructions } from '../repositories/instructions-repository';
import { listStandingRules } from '../repositories/profile-repository';
import { normaliseFactText } from './fact-text';

type GetRequest = z.output<typeof MemoryInstructionsGetRequest>;
type PutRequest = z.output<typeof MemoryInstructionsPutRequest>;

// Tokens are counted with the estimate counter, not the model's: the cap must mean the same
// whichever model answers, and the UI shows the same figure.
function tokensOfRules(rules: { id: string; content: string }[], leftOut?: string): number {
  return rules
    .filter((rule) => rule.id !== leftOut)
    .reduce((sum, rule) => sum + estimateTokens(rule.content), 0);
}

async function readInstructions(db: Queryable, userId: string) {
  const [text, rules] = await Promise.all([
    findInstructions(db, userId),
    listStandingRules(db, userId),
  ]);
  return { text: text ?? '', rulesTokens: tokensOfRules(rules) };
}

// One wording of the cap for the API's refusals and an import's report.
function overCapReason(used: number, adding: number): string {
  return (
    `standing instructions and rules are capped at ${INSTRUCTIONS_TOKEN_CAP} tokens: ` +
    `${used} are in use and this needs ${adding}; shorten or remove some first`
  );
}

function overCap(used: number, adding: number): BusError {
  return new BusError('bad_request', overCapReason(used, adding));
}

// The tokens the user's instructions and standing rules take, but for the rule `replacing`.
async function tokensInUse(db: Queryable, userId: string, replacing?: string): Promise<number> {
  const [text, rules] = await Promise.all([
    findInstructions(db, userId),
    listStandingRules(db, userId),
  ]);
  return estimateTokens(text ?? '') + tokensOfRules(rules, replacing);
}

export async function getInstructions(
  pool: Pool,
  request: GetRequest,
): Promise<MemoryInstructionsResponse> {
  const { text, rulesTokens } = await readInstructions(pool, request.userId);
  return {
    instructions: { text, tokens: estimateTokens(text), cap: INSTRUCTIONS_TOKEN_CAP, rulesTokens },
  };
}

// Under the lock that rules are stored under, so a rule and the text cannot pass the cap
// together by each fitting alone.
export async function putInstructions(
  pool: Pool,
  request: PutRequest,
): Promise<MemoryInstructionsResponse> {
  return withTransaction(pool, async (db) => {
    await lockUserFacts(db, request.userId);
    const { text: old, rulesTokens } = await readInstructions(db, request.userId);
    const tokens = estimateTokens(request.text);
    if (rulesTokens + tokens > INSTRUCTIONS_TOKEN_CAP) {
      throw overCap(rulesTokens + estimateTokens(old), tokens);
    }
    await saveInstructions(db, request.userId, request.text);
    return {
      instructions: { text: request.text, tokens, cap: INSTRUCTIONS_TOKEN_CAP, rulesTokens },
    };
  });
}

// Refuses a rule that would take the instructions and rules past the cap. `replacing` is the
// rule it succeeds, whose tokens it frees. The caller holds lockUserFacts.
export async function ensureRuleFits(
  db: PoolClient,
  userId: string,
  content: string,
  replacing?: string,
): Promise<void> {
  const used = await tokensInUse(db, userId, replacing);
  const adding = estimateTokens(content);
  if (used + adding > INSTRUCTIONS_TOKEN_CAP) throw overCap(used, adding);
}

// Of standing rules that arrive together (an import), each in turn that fits beside what is in
// use and the ones before it, as ensureRuleFits would let them in one by one: the others, by id,
// with why, in the words the API refuses one with. The caller holds lockUserFacts.
export async function findRulesOverCap(
  db: PoolClient,
  userId: string,
  rules: { id: string; content: string }[],
): Promise<Map<string, string>> {
  const overCapById = new Map<string, string>();
  if (rules.length === 0) return overCapById;
  let used = await tokensInUse(db, userId);
  for (const rule of rules) {
    const adding = estimateTokens(rule.content);
    if (used + adding > INSTRUCTIONS_TOKEN_CAP) {
      overCapById.set(rule.id, overCapReason(used, adding));
    } else {
      used += adding;
    }
  }
  return overCapById;
}

// An import's instructions never replace the user's own: a user who has none (one moving installs)
// takes the file's, if PUT would let them in beside the rules the user has. Under the lock, as PUT
// is, and before the file's rules are checked against the cap, so those count the text. The
// caller's transaction holds the lock until the batch ends.
export async function restoreInstructions(
  db: PoolClient,
  userId: string,
  restored: Extract<ExportRecord, { type: 'instructions' }>,
): Promise<InstructionsImport> {
  await lockUserFacts(db, userId);
  const { text, rulesTokens } = await readInstructions(db, userId);
  if (text !== '') {
    return normaliseFactText(text) === normaliseFactText(restored.text) ? 'same' : 'kept-yours';
  }
  if (rulesTokens + estimateTokens(restored.text) > INSTRUCTIONS_TOKEN_CAP) return 'over-cap';
  await saveInstructions(db, userId, restored.text, restored.updatedAt);
  return 'imported';
}
