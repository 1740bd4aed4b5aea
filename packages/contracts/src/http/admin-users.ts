import { z } from 'zod';
import { Id } from '../common';

// POST /v1/admin/users
export const CreateUserRequest = z.strictObject({
  name: z.string().trim().min(1, 'name must not be empty').max(100),
});
export type CreateUserRequest = z.infer<typeof CreateUserRequest>;

export const CreateUserResponse = z.object({
  user: z.object({ id: Id, name: z.string() }),
  // Shown once: only its hash is stored.
  apiKey: z.string(),
});
export type CreateUserResponse = z.infer<typeof CreateUserResponse>;
