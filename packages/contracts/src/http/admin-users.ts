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

// GET /v1/admin/users
export const AdminUser = z.object({
  id: Id,
  name: z.string(),
  createdAt: z.iso.datetime({ offset: true }),
  activeKeys: z.number().int().nonnegative(),
  revokedKeys: z.number().int().nonnegative(),
});
export type AdminUser = z.infer<typeof AdminUser>;

export const ListUsersResponse = z.object({ users: z.array(AdminUser) });
export type ListUsersResponse = z.infer<typeof ListUsersResponse>;
