import { nextOccurrence, type Rule } from '../rules';

type Bounds = { rule: Rule; startAt: Date | null; endAt: Date | null };

// The schedule's first occurrence strictly after `after`: one of its rule's, not before its start
// and not after its end. Null when there is none.
export function occurrenceAfter(schedule: Bounds, after: Date): Date | null {
  const beforeStart = schedule.startAt && new Date(schedule.startAt.getTime() - 1);
  const from = beforeStart && beforeStart > after ? beforeStart : after;
  const next = nextOccurrence(schedule.rule, from);
  if (!next || (schedule.endAt && next > schedule.endAt)) return null;
  return next;
}
