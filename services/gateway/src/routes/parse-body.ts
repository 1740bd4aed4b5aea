import { describeZodError } from '@jarvis/bus';
import { HttpError } from '@jarvis/service-kit';
import { z } from 'zod';

export function parseBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  if (body === undefined) {
    throw new HttpError('bad_request', 'expected a JSON body with Content-Type: application/json');
  }
  const result = z.safeParse(schema, body);
  if (!result.success) throw new HttpError('bad_request', describeZodError(result.error));
  return result.data;
}
