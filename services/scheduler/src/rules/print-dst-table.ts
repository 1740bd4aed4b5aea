// Prints the DST table of issue 24 as Markdown, computed by nextOccurrence and checked against the
// expected instants of dst-cases.ts: `pnpm --filter @jarvis/scheduler dst-table`.
import { DST_CASES, followsLabel, formatOccurrence, ruleLabel } from './dst-cases';
import { nextOccurrence } from './rule';

const lines = [
  '| zone | change (2026) | rule | follows | fires at (UTC = wall clock there) | note | as expected |',
  '| --- | --- | --- | --- | --- | --- | --- |',
];
for (const row of DST_CASES) {
  const fired: string[] = [];
  let after = new Date(row.from);
  for (const _ of row.expected) {
    const next = nextOccurrence(row.rule, after);
    if (!next) break;
    fired.push(formatOccurrence(next, row.zone));
    after = next;
  }
  const isExpected = fired.join() === row.expected.join();
  lines.push(
    `| ${row.zone} | ${row.change} | \`${ruleLabel(row.rule)}\` | ${followsLabel(row.rule)} | ${fired.join('<br>')} | ${row.note} | ${isExpected ? 'yes' : 'NO'} |`,
  );
}
process.stdout.write(`${lines.join('\n')}\n`);
