import { z } from 'zod';
import { defineRpc } from './define';

export const ToolRisk = z.enum(['safe', 'risky']);
export type ToolRisk = z.infer<typeof ToolRisk>;

export const ToolDescriptor = z.object({
  name: z.string(),
  description: z.string(),
  risk: ToolRisk,
  inputSchema: z.record(z.string(), z.unknown()),
  // How long a call may take, when the tool needs longer than the caller's default (run_code's
  // sandbox has its own wall time); the caller still stops it at its turn's deadline.
  timeoutMs: z.number().int().positive().optional(),
});
export type ToolDescriptor = z.infer<typeof ToolDescriptor>;

export const ToolsListRequest = z.object({});
export type ToolsListRequest = z.infer<typeof ToolsListRequest>;

export const ToolsListResponse = z.object({ tools: z.array(ToolDescriptor) });
export type ToolsListResponse = z.infer<typeof ToolsListResponse>;

export const toolsList = defineRpc('tools.list', ToolsListRequest, ToolsListResponse);
