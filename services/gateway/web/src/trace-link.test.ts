import { describe, expect, it } from 'vitest';
import { traceExploreUrl } from './trace-link';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

describe('traceExploreUrl', () => {
  it("opens Explore on Tempo's provisioned datasource with the run's trace id", () => {
    const url = new URL(
      traceExploreUrl('https://jarvis.example.com/grafana/', TRACE_ID, {
        from: '2026-11-28T09:00:00.000Z',
        to: '2026-11-28T09:00:05.000Z',
      }),
    );

    expect(url.origin + url.pathname).toBe('https://jarvis.example.com/grafana/explore');
    expect(url.searchParams.get('schemaVersion')).toBe('1');
    const panes = JSON.parse(url.searchParams.get('panes') ?? '{}') as Record<string, unknown>;
    expect(Object.values(panes)).toEqual([
      {
        datasource: 'tempo',
        queries: [
          {
            refId: 'A',
            datasource: { type: 'tempo', uid: 'tempo' },
            queryType: 'traceql',
            query: TRACE_ID,
          },
        ],
        // Five minutes either side of the run.
        range: {
          from: String(Date.parse('2026-11-28T08:55:00.000Z')),
          to: String(Date.parse('2026-11-28T09:05:05.000Z')),
        },
      },
    ]);
  });
});
