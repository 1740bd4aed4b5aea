import { describeZodError } from '@jarvis/bus';
import { HttpError } from '@jarvis/service-kit';
import { z } from 'zod';

// Each value's key and its parent's, so the path is only spelled out for the one that is found.
type Place = { key: string; parent: Place } | undefined;

function pathOf(place: Place): string {
  const keys: string[] = [];
  for (let at = place; at; at = at.parent) keys.push(at.key);
  return keys.length > 0 ? keys.reverse().join('.') : '(root)';
}

// Where the input holds U+0000, named as zod names an issue's path. Postgres refuses NUL in text
// and jsonb, so one in a chat message, a fact or a key name would fail deep in a service as a
// 500; it is refused here, at the door, for every route. A loop rather than recursion: metadata
// may nest thousands deep.
function findNul(input: unknown): string | undefined {
  const pending: [unknown, Place][] = [[input, undefined]];
  for (let next = pending.pop(); next; next = pending.pop()) {
    const [value, place] = next;
    if (typeof value === 'string') {
      if (value.includes('\u0000')) return pathOf(place);
    } else if (typeof value === 'object' && value !== null) {
      for (const [key, item] of Object.entries(value)) {
        if (key.includes('\u0000')) return pathOf({ key, parent: place });
        pending.push([item, { key, parent: place }]);
      }
    }
  }
  return undefined;
}

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === undefined) {
    throw new HttpError('bad_request', 'expected a JSON body with Content-Type: application/json');
  }
  const result = z.safeParse(schema, body);
  if (!result.success) throw new HttpError('bad_request', describeZodError(result.error));
  const nulAt = findNul(result.data);
  if (nulAt !== undefined) {
    throw new HttpError('bad_request', `${nulAt}: must not contain NUL characters`);
  }
  return result.data;
}
