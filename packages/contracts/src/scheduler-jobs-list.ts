import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';

export const JobKind = z.enum(['once', 'interval', 'cron']);

export const Job = z.object({
  id: Id,
  kind: JobKind,
  title: z.string(),
  nextRunAt: z.iso.datetime({ offset: true }).nullable(),
  createdAt: z.iso.datetime({ offset: true }),
});
export type Job = z.infer<typeof Job>;

export const JobsListRequest = z.object({ userId: Id });
export type JobsListRequest = z.infer<typeof JobsListRequest>;

export const JobsListResponse = z.object({ jobs: z.array(Job) });
export type JobsListResponse = z.infer<typeof JobsListResponse>;

export const schedulerJobsList = defineRpc(
  'scheduler.jobs.list',
  JobsListRequest,
  JobsListResponse,
);
