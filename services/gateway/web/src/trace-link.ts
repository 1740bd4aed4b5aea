// A run's trace in Grafana's Explore, on the Tempo datasource the observability stack provisions
// (uid `tempo`), in the URL format of Grafana 10 and later (schemaVersion 1, one pane).

const TEMPO_UID = 'tempo';
// Around the run, so a Tempo set to search by time (or with little retention left) finds it.
const MARGIN_MS = 5 * 60_000;

export function traceExploreUrl(
  grafanaUrl: string,
  traceId: string,
  window: { from: string; to: string | null },
): string {
  const from = Date.parse(window.from) - MARGIN_MS;
  const to = (window.to ? Date.parse(window.to) : Date.now()) + MARGIN_MS;
  const panes = {
    trace: {
      datasource: TEMPO_UID,
      queries: [
        {
          refId: 'A',
          datasource: { type: 'tempo', uid: TEMPO_UID },
          queryType: 'traceql',
          query: traceId,
        },
      ],
      range: { from: String(from), to: String(to) },
    },
  };
  const query = new URLSearchParams({ schemaVersion: '1', panes: JSON.stringify(panes) });
  return `${grafanaUrl.replace(/\/+$/, '')}/explore?${query}`;
}
