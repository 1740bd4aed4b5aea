import { z } from 'zod';
import { ErrorInfo } from '../errors';

// Every HTTP error answers with this body.
export const ErrorBody = z.object({ error: ErrorInfo });
export type ErrorBody = z.infer<typeof ErrorBody>;
