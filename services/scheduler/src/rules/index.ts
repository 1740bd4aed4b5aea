// The scheduler's time rules: pure functions of their arguments, no I/O; `now` is injectable.
export { checkCron } from './cron-spec';
export { describeInstant } from './describe-instant';
export { nextOccurrence, type Rule } from './rule';
export { maxRunsPerDay, shortestGapMinutes } from './rule-limits';
