export type Figures = { p50: number; p95: number; max: number };

// Nearest-rank p50 and p95 and the largest value (NaN for no values), each passed through
// `round` for the bench's report.
export function percentiles(
  values: number[],
  round: (value: number) => number = (value) => value,
): Figures {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number) =>
    sorted[Math.min(sorted.length - 1, Math.max(Math.ceil((p / 100) * sorted.length) - 1, 0))] ??
    Number.NaN;
  return { p50: round(at(50)), p95: round(at(95)), max: round(sorted.at(-1) ?? Number.NaN) };
}
