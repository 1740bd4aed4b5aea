import { USER_EVENTS_STREAM, UserEvent, userEventSubject } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureAdminKey } from '../services/api-keys';
import { badRequest, type RouterFixture, startRouterFixture } from './router-fixture';

// POST /v1/admin/alerts over the machine's NATS: Grafana's webhook payload becomes one ops_alert
// user event per alert on the admin's subject, each with an id that a retry repeats, so the
// stream keeps it once (and the tools service, which delivers by that id, sends it once).
const GRAFANA_URL = 'https://jarvis.example.com/grafana';
let harness: RouterFixture;
let adminKey: string;
let adminId: string;

beforeAll(async () => {
  harness = await startRouterFixture('/v1', { grafanaUrl: GRAFANA_URL });
  const { generatedKey } = await ensureAdminKey(harness.db.pool, undefined);
  if (!generatedKey) throw new Error('expected a generated admin key');
  adminKey = generatedKey;
  const me = await harness.call('GET', '/me', { key: adminKey });
  adminId = (me.body as { user: { id: string } }).user.id;
});

afterAll(async () => {
  const jsm = await harness?.bus.nc.jetstreamManager();
  await jsm?.streams.delete(harness.bus.streamName(USER_EVENTS_STREAM.stream)).catch(() => {});
  await harness?.stop();
});

const call: RouterFixture['call'] = (method, route, options) =>
  harness.call(method, route, options);

// What Grafana 12 posts to a webhook contact point, fields Jarvis does not read included.
function grafanaPayload(
  status: 'firing' | 'resolved',
  alerts: Array<{ job: string; fingerprint: string; generatorURL?: string }>,
) {
  const startsAt = '2026-11-28T20:51:03.157076+01:00';
  return {
    receiver: 'jarvis-admin',
    status,
    orgId: 1,
    alerts: alerts.map((alert) => ({
      status,
      labels: {
        alertname: 'Service down',
        grafana_folder: 'Jarvis',
        job: alert.job,
        __alert_rule_uid__: 'service-down',
      },
      annotations: {
        summary: `Service down: ${alert.job}`,
        description: `Prometheus has not scraped ${alert.job} for 2 minutes.`,
      },
      startsAt,
      endsAt: status === 'resolved' ? '2026-11-28T21:01:03Z' : '0001-01-01T00:00:00Z',
      generatorURL:
        alert.generatorURL ?? `${GRAFANA_URL}/alerting/grafana/service-down/view?orgId=1`,
      fingerprint: alert.fingerprint,
      silenceURL: `${GRAFANA_URL}/alerting/silence/new?alertmanager=grafana`,
      dashboardURL: '',
      panelURL: '',
      values: { A: 0, C: 1 },
      valueString: "[ var='A' labels={job=memory} value=0 ]",
    })),
    groupLabels: { alertname: 'Service down' },
    commonLabels: { alertname: 'Service down' },
    commonAnnotations: {},
    externalURL: `${GRAFANA_URL}/`,
    version: '1',
    groupKey: '{}:{alertname="Service down"}',
    truncatedAlerts: 0,
    title: '[FIRING:1] Service down',
    state: 'alerting',
    message: '**Firing**',
  };
}

// Every message of the namespace's USER_EVENTS stream: its subject, the id it was published
// with, and the event.
async function storedEvents() {
  const jsm = await harness.bus.nc.jetstreamManager();
  const stream = harness.bus.streamName(USER_EVENTS_STREAM.stream);
  const info = await jsm.streams.info(stream);
  const events = [];
  for (let seq = info.state.first_seq; seq <= info.state.last_seq && seq > 0; seq++) {
    const message = await jsm.streams.getMessage(stream, { seq });
    events.push({
      subject: message.subject,
      id: message.header.get('Nats-Msg-Id'),
      event: UserEvent.parse(message.json()),
    });
  }
  return events;
}

describe('POST /v1/admin/alerts', () => {
  it('answers 401 without a key and 403 to a user key', async () => {
    const body = grafanaPayload('firing', [{ job: 'memory', fingerprint: 'a1' }]);
    expect((await call('POST', '/admin/alerts', { body })).status).toBe(401);
    expect(await call('POST', '/admin/alerts', { key: harness.alice.key, body })).toEqual({
      status: 403,
      body: { error: { code: 'forbidden', message: 'this route needs an admin key' } },
    });
  });

  it.each([
    ['no alerts', { status: 'firing', alerts: [] }, /^alerts: /],
    ['a status Grafana never sends', { status: 'pending', alerts: [] }, /^status: /],
    [
      'an alert without a fingerprint',
      { ...grafanaPayload('firing', [{ job: 'memory', fingerprint: 'x' }]), alerts: [{}] },
      /^alerts\.0\./,
    ],
    [
      'a fingerprint that could not name a message',
      grafanaPayload('firing', [{ job: 'memory', fingerprint: 'a b\r\n' }]),
      /^alerts\.0\.fingerprint: /,
    ],
    [
      'more alerts than one request may carry',
      grafanaPayload(
        'firing',
        Array.from({ length: 101 }, (_, index) => ({ job: 'memory', fingerprint: `f${index}` })),
      ),
      /^alerts: /,
    ],
    ['an array', [], /^\(root\): /],
  ])('answers 400 to %s', async (_what, body, message) => {
    expect(await call('POST', '/admin/alerts', { key: adminKey, body })).toEqual(
      badRequest(message),
    );
  });

  it("publishes one ops_alert per alert to the admin's events, once however often it is posted", async () => {
    const body = grafanaPayload('firing', [
      { job: 'memory', fingerprint: 'c6eadffa33fcdf37' },
      // A link out of the install's Grafana is not passed on.
      { job: 'tools', fingerprint: '9f1e2d3c4b5a6978', generatorURL: 'https://evil.example/x' },
    ]);
    expect(await call('POST', '/admin/alerts', { key: adminKey, body })).toEqual({
      status: 202,
      body: { accepted: 2 },
    });
    // Grafana's retry of the same notification.
    expect((await call('POST', '/admin/alerts', { key: adminKey, body })).status).toBe(202);

    const stored = await storedEvents();
    expect(stored).toHaveLength(2);
    const memory = stored.find(({ id }) => id?.startsWith('alert:c6eadffa33fcdf37:'));
    expect(memory).toEqual({
      subject: harness.bus.subject(userEventSubject(adminId)),
      id: 'alert:c6eadffa33fcdf37:2026-11-28T19:51:03.157Z:firing',
      event: {
        type: 'ops_alert',
        occurredAt: '2026-11-28T20:51:03.157076+01:00',
        alert: {
          status: 'firing',
          name: 'Service down',
          labels: { alertname: 'Service down', grafana_folder: 'Jarvis', job: 'memory' },
          summary: 'Service down: memory',
          description: 'Prometheus has not scraped memory for 2 minutes.',
          startsAt: '2026-11-28T20:51:03.157076+01:00',
          fingerprint: 'c6eadffa33fcdf37',
          url: `${GRAFANA_URL}/alerting/grafana/service-down/view?orgId=1`,
        },
      },
    });
    const tools = stored.find(({ id }) => id?.startsWith('alert:9f1e2d3c4b5a6978:'));
    expect(tools?.event).toMatchObject({
      alert: { labels: { job: 'tools' }, url: `${GRAFANA_URL}/alerting/list` },
    });

    // Resolved, the same alert is news again: a new id, told when it ended.
    const resolved = grafanaPayload('resolved', [
      { job: 'memory', fingerprint: 'c6eadffa33fcdf37' },
    ]);
    expect((await call('POST', '/admin/alerts', { key: adminKey, body: resolved })).status).toBe(
      202,
    );
    const after = await storedEvents();
    expect(after).toHaveLength(3);
    expect(after[2]).toMatchObject({
      id: 'alert:c6eadffa33fcdf37:2026-11-28T19:51:03.157Z:resolved',
      event: {
        occurredAt: '2026-11-28T21:01:03Z',
        alert: { status: 'resolved', endsAt: '2026-11-28T21:01:03Z' },
      },
    });
  });
});

describe('GRAFANA_URL', () => {
  it('is told to the web UI with the user, for its trace links', async () => {
    const reply = await call('GET', '/me', { key: harness.alice.key });
    expect(reply).toMatchObject({ status: 200, body: { grafanaUrl: GRAFANA_URL } });
  });
});
