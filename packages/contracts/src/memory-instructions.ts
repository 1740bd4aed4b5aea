import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

// Standing instructions: a text the user writes once ("answer in Norwegian, keep it short") that
// is in every prompt, with the user's standing rules (facts of category `rule`). The prompt never
// cuts them, so together they must fit INSTRUCTIONS_TOKEN_CAP (counted with @jarvis/tokens'
// estimate counter): a change that would pass it is refused, naming the cap and what is in use.

export const INSTRUCTIONS_TOKEN_CAP = 1_000;
export const INSTRUCTIONS_MAX_CHARS = 8_000;

export const InstructionsText = z.string().max(INSTRUCTIONS_MAX_CHARS);

export const Instructions = z.object({
  // Empty until the user writes some.
  text: z.string(),
  tokens: z.number().int().nonnegative(),
  cap: z.number().int().positive(),
  // What the user's standing rules take of the same cap.
  rulesTokens: z.number().int().nonnegative(),
});
export type Instructions = z.infer<typeof Instructions>;

export const MemoryInstructionsResponse = z.object({ instructions: Instructions });
export type MemoryInstructionsResponse = z.infer<typeof MemoryInstructionsResponse>;

// memory.instructions.get: the user's instructions (empty text when none were written).
export const MemoryInstructionsGetRequest = z.object({ userId: Id });
export type MemoryInstructionsGetRequest = z.input<typeof MemoryInstructionsGetRequest>;
export const memoryInstructionsGet = defineRpc(
  'memory.instructions.get',
  MemoryInstructionsGetRequest,
  MemoryInstructionsResponse,
);

// memory.instructions.put: replaces the text (empty clears it). Past the cap: bad_request.
const putFields = { text: InstructionsText };
export const MemoryInstructionsPutRequest = z.object({ userId: Id, ...putFields });
export type MemoryInstructionsPutRequest = z.input<typeof MemoryInstructionsPutRequest>;
export const memoryInstructionsPut = defineRpc(
  'memory.instructions.put',
  MemoryInstructionsPutRequest,
  MemoryInstructionsResponse,
);

// PUT /v1/me/instructions (the user comes from the API key).
export const InstructionsPutBody = z.strictObject(putFields);
