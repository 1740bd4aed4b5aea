import { describe, expect, it } from 'vitest';
import { alertLink } from './ops-alerts';

const GRAFANA = 'https://jarvis.example.com/grafana';
const LIST = `${GRAFANA}/alerting/list`;

describe('alertLink', () => {
  it("passes on a link into the install's own Grafana", () => {
    const rule = `${GRAFANA}/alerting/grafana/abc/view?orgId=1`;
    expect(alertLink(rule, GRAFANA)).toBe(rule);
  });

  it.each([
    ['another host', 'https://evil.example/grafana/alerting/x'],
    ['another scheme', 'http://jarvis.example.com/grafana/alerting/x'],
    ['a path that only starts alike', 'https://jarvis.example.com/grafana-evil/x'],
    ['a path that climbs out', 'https://jarvis.example.com/grafana/../admin'],
    ['credentials in the URL', 'https://user:pw@jarvis.example.com/grafana/x'],
    ['Grafana inside the container', 'http://grafana:3000/grafana/alerting/x'],
    ['no URL at all', 'not a url'],
    ['none', undefined],
  ])("links to Grafana's alert list instead of %s", (_what, generatorUrl) => {
    expect(alertLink(generatorUrl, GRAFANA)).toBe(LIST);
  });

  it('links nowhere when the install has no GRAFANA_URL', () => {
    expect(alertLink(`${GRAFANA}/alerting/x`, undefined)).toBeUndefined();
  });

  it('takes any path under a Grafana served at the root of its own host', () => {
    expect(alertLink('https://grafana.example.com/alerting/x', 'https://grafana.example.com')).toBe(
      'https://grafana.example.com/alerting/x',
    );
  });
});
