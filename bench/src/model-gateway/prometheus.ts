// The bench's figures from model-gateway's /metrics: a histogram's change between two scrapes,
// and its percentiles estimated from its buckets as Prometheus' histogram_quantile does. The
// text format's parser on npm (parse-prometheus-text-format) has no types; the few histogram
// lines read here need only the two regular expressions below.

type Sample = { name: string; labels: Record<string, string>; value: number };
export type Scrape = Sample[];

// Cumulative counts per upper bound, ascending, the last one +Inf.
export type Histogram = { bounds: number[]; cumulative: number[]; count: number; sum: number };

const SAMPLE_LINE = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/;
const LABEL = /(\w+)="((?:[^"\\]|\\.)*)"/g;

export async function scrape(url: string): Promise<Scrape> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url} answered ${response.status}`);
  return (await response.text()).split('\n').flatMap((line) => {
    const match = SAMPLE_LINE.exec(line);
    if (!match) return [];
    const [, name = '', labelText = '', value = ''] = match;
    const labels = Object.fromEntries(
      [...labelText.matchAll(LABEL)].map(([, key = '', text = '']) => [key, text]),
    );
    return [{ name, labels, value: numberOf(value) }];
  });
}

// The format writes infinity as +Inf, which Number() does not read.
function numberOf(text: string): number {
  return text === '+Inf' ? Number.POSITIVE_INFINITY : Number(text);
}

// A histogram's series whose labels include `labels`, added together.
export function histogramOf(
  samples: Scrape,
  name: string,
  labels: Record<string, string> = {},
): Histogram {
  const matching = samples.filter((sample) =>
    Object.entries(labels).every(([key, value]) => sample.labels[key] === value),
  );
  const byBound = new Map<number, number>();
  for (const sample of matching) {
    if (sample.name !== `${name}_bucket`) continue;
    const bound = numberOf(sample.labels.le ?? '');
    byBound.set(bound, (byBound.get(bound) ?? 0) + sample.value);
  }
  const bounds = [...byBound.keys()].sort((a, b) => a - b);
  const total = (suffix: string) =>
    matching
      .filter((sample) => sample.name === `${name}_${suffix}`)
      .reduce((sum, sample) => sum + sample.value, 0);
  return {
    bounds,
    cumulative: bounds.map((bound) => byBound.get(bound) ?? 0),
    count: total('count'),
    sum: total('sum'),
  };
}

// What was observed between two scrapes of the same histogram.
export function observedSince(after: Histogram, before: Histogram): Histogram {
  return {
    bounds: after.bounds,
    cumulative: after.cumulative.map((count, index) => count - (before.cumulative[index] ?? 0)),
    count: after.count - before.count,
    sum: after.sum - before.sum,
  };
}

// The bucket the rank falls in, interpolated linearly within it (from 0 for the first bucket); a
// rank in the +Inf bucket gets the largest finite bound. NaN when nothing was observed.
export function quantile(histogram: Histogram, q: number): number {
  const { bounds, cumulative, count } = histogram;
  if (count === 0) return Number.NaN;
  const rank = q * count;
  const index = cumulative.findIndex((below) => below >= rank);
  const upper = bounds[index] ?? Number.NaN;
  const lower = index > 0 ? (bounds[index - 1] ?? 0) : 0;
  if (upper === Number.POSITIVE_INFINITY) return lower;
  const before = index > 0 ? (cumulative[index - 1] ?? 0) : 0;
  const inBucket = (cumulative[index] ?? 0) - before;
  return lower + (upper - lower) * (inBucket > 0 ? (rank - before) / inBucket : 1);
}
