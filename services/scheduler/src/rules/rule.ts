import { nextCronOccurrence } from './next-occurrence';

export type Rule =
  | { kind: 'once'; at: Date }
  | { kind: 'cron'; cron: string; timeZone: string }
  // anchor: startAt ?? createdAt. Occurrences are anchor + k * everyMinutes for k >= 0.
  | { kind: 'interval'; everyMinutes: number; anchor: Date };

const MINUTE = 60_000;

// The first occurrence strictly after `after` (startAt is the caller's), or undefined.
// Cron rules with set hours (`30 2 * * *`) follow the wall clock of their zone; those whose hour
// field starts with '*' (`30 * * * *`, `0 */2 * * *`) follow elapsed time, firing whenever the
// zone's clock reads a matching time (see nextCronOccurrence for DST). Intervals follow elapsed
// time from the anchor, so an hourly interval fires every real hour across DST.
export function nextOccurrence(rule: Rule, after: Date): Date | undefined {
  const afterMs = after.getTime();
  if (rule.kind === 'once') return rule.at.getTime() > afterMs ? rule.at : undefined;
  if (rule.kind === 'interval') {
    const anchorMs = rule.anchor.getTime();
    if (anchorMs > afterMs) return rule.anchor;
    const period = rule.everyMinutes * MINUTE;
    const steps = Math.floor((afterMs - anchorMs) / period) + 1;
    return new Date(anchorMs + steps * period);
  }
  const next = nextCronOccurrence(rule.cron, rule.timeZone, afterMs);
  return next === undefined ? undefined : new Date(next);
}
