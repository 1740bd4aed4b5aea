import { BusError } from '@jarvis/bus';
import type {
  RunsGetRequest,
  RunsGetResponse,
  RunsListRequest,
  RunsListResponse,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import type { z } from 'zod';
import { findUserRun, listRunSteps, listUserRuns } from '../repositories/runs-query-repository';

type ListRequest = z.output<typeof RunsListRequest>;
type GetRequest = z.output<typeof RunsGetRequest>;

// The cursor is a createdAt, to the millisecond, while Postgres keeps microseconds: a page ending
// inside a millisecond would make the next one (created before it) skip the rest of it. So a full
// page (found holds one more than the limit) stops before the millisecond it shares with the
// first item left out; nextBefore is set only when more follow.
export function pageByCreatedAt<T extends { createdAt: string }>(
  found: T[],
  limit: number,
): { items: T[]; nextBefore?: string } {
  const next = found[limit];
  if (!next) return { items: found };
  const page = found.slice(0, limit);
  const whole = page.filter((item) => item.createdAt !== next.createdAt);
  // More than a page of items in one millisecond: the page can only cut it.
  const items = whole.length > 0 ? whole : page;
  const last = items.at(-1);
  return last ? { items, nextBefore: last.createdAt } : { items };
}

export async function listRuns(pool: Pool, request: ListRequest): Promise<RunsListResponse> {
  // One more than asked: whether it exists tells if another page follows.
  const found = await listUserRuns(
    pool,
    {
      userId: request.userId,
      before: request.before ? new Date(request.before) : undefined,
      conversationId: request.conversationId,
      status: request.status,
    },
    request.limit + 1,
  );
  const { items, nextBefore } = pageByCreatedAt(found, request.limit);
  return nextBefore ? { runs: items, nextBefore } : { runs: items };
}

export async function getRun(pool: Pool, request: GetRequest): Promise<RunsGetResponse> {
  const run = await findUserRun(pool, request.userId, request.id);
  // A missing run and another user's answer the same, so ids never leak.
  if (!run) throw new BusError('not_found', 'run not found');
  const steps = await listRunSteps(pool, request.userId, run.id);
  return { run: { ...run, steps } };
}
