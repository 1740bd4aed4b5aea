// No body the API takes nests near this deep; metadata nested thousands deep made
// JSON.stringify (on its way to NATS and to Postgres' jsonb) throw a RangeError: a 500.
export const JSON_MAX_DEPTH = 64;

export const JSON_TOO_DEEP = `JSON nested deeper than ${JSON_MAX_DEPTH} levels`;

// Whether objects and arrays nest deeper than JSON_MAX_DEPTH (a top-level object is level 1).
// A loop rather than recursion, for the same reason as the limit.
export function isNestedTooDeep(value: unknown): boolean {
  const pending: [unknown, number][] = [[value, 1]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [item, depth] = next;
    if (typeof item !== 'object' || item === null) continue;
    if (depth > JSON_MAX_DEPTH) return true;
    for (const child of Object.values(item)) pending.push([child, depth + 1]);
  }
  return false;
}
