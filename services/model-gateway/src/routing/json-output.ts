import { BusError } from '@jarvis/bus';
import { Ajv, type ValidateFunction } from 'ajv';

// Structured output is checked here whatever the provider promised: a schema a provider does
// not fully support, or a model that ignores it, must not reach the caller as valid.
const ajv = new Ajv({ allErrors: false, strict: false });
const compiled = new Map<string, ValidateFunction>();
const MAX_COMPILED = 200;

export function compileSchema(schema: Record<string, unknown>): ValidateFunction {
  const key = JSON.stringify(schema);
  const cached = compiled.get(key);
  if (cached) return cached;
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new BusError(
      'bad_request',
      `responseFormat.schema is not a valid JSON Schema: ${(error as Error).message}`,
    );
  }
  if (compiled.size >= MAX_COMPILED) compiled.clear();
  compiled.set(key, validate);
  return validate;
}

export type JsonCheck = { ok: true; value: unknown } | { ok: false; problem: string };

// Models often wrap JSON in a Markdown fence even when told not to; that much is forgiven.
export function checkJson(text: string, validate: ValidateFunction): JsonCheck {
  const fenced = /^\s*```(?:json)?\s*([\s\S]*?)\s*```\s*$/i.exec(text);
  let value: unknown;
  try {
    value = JSON.parse(fenced?.[1] ?? text);
  } catch {
    return { ok: false, problem: 'the reply is not valid JSON' };
  }
  if (validate(value)) return { ok: true, value };
  const first = validate.errors?.[0];
  const where = first?.instancePath || '(root)';
  return { ok: false, problem: `${where} ${first?.message ?? 'does not match the schema'}` };
}
