// A sample's value in a registry's text (OpenMetrics or Prometheus', as /metrics serves it),
// found by its name and exact labels in any order: a series with one label more (a histogram
// bucket's `le`, say) is another series. Undefined when the series is not there.
export function metricSample(
  text: string,
  name: string,
  labels: Record<string, string>,
): number | undefined {
  for (const line of text.split('\n')) {
    // An exemplar after the value (` # {trace_id="..."} ...`) is not part of the sample.
    const match = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)/.exec(line);
    if (!match || match[1] !== name) continue;
    const found = Object.fromEntries(
      [...(match[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map(([, key, value]) => [key, value]),
    );
    const isSame =
      Object.keys(found).length === Object.keys(labels).length &&
      Object.entries(labels).every(([key, value]) => found[key] === value);
    if (isSame) return Number(match[3]);
  }
  return undefined;
}
