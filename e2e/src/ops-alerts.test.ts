import { createHmac, randomBytes } from 'node:crypto';
import { DeliveriesListResponse, type Delivery } from '@jarvis/contracts';
import {
  type HttpRecorder,
  type StackFixture,
  startHttpRecorder,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Grafana's alerts through the whole stack: what its webhook contact point posts (with the admin
// key) to POST /v1/admin/alerts becomes an ops_alert event of the admin, which the tools service
// delivers, signed, to the admin's webhook channel (a local HTTP server) as an `alert`: once, however
// often Grafana sends it again. A firing alert goes through quiet hours; its all-clear waits.
const WEBHOOK_SECRET = `whsec-${randomBytes(16).toString('hex')}`;
const GRAFANA_URL = 'https://jarvis.example.test/grafana';
const FINGERPRINT = 'c6eadffa33fcdf37';
const STARTS_AT = '2026-11-28T20:51:03.157076+01:00';

// What Grafana 12 posts for one alert of the provisioned "Service down" rule.
function grafanaPayload(status: 'firing' | 'resolved') {
  return {
    receiver: 'jarvis-admin',
    status,
    orgId: 1,
    alerts: [
      {
        status,
        labels: {
          alertname: 'Service down',
          grafana_folder: 'Jarvis',
          instance: 'memory:8082',
          job: 'memory',
          severity: 'critical',
        },
        annotations: {
          summary: 'memory has been down for 2 minutes (Prometheus cannot scrape memory:8082).',
        },
        startsAt: STARTS_AT,
        endsAt: status === 'resolved' ? '2026-11-28T21:04:03.157076+01:00' : '0001-01-01T00:00:00Z',
        generatorURL: `${GRAFANA_URL}/alerting/grafana/jarvis-service-down/view?orgId=1`,
        fingerprint: FINGERPRINT,
        silenceURL: `${GRAFANA_URL}/alerting/silence/new?alertmanager=grafana&matcher=job%3Dmemory`,
        dashboardURL: '',
        panelURL: '',
        values: { A: 0, C: 1 },
        valueString: "[ var='A' labels={instance=memory:8082, job=memory} value=0 ]",
      },
    ],
    groupLabels: { alertname: 'Service down', grafana_folder: 'Jarvis' },
    commonLabels: { alertname: 'Service down', grafana_folder: 'Jarvis', job: 'memory' },
    commonAnnotations: {},
    externalURL: `${GRAFANA_URL}/`,
    version: '1',
    groupKey: '{}/{}:{alertname="Service down", grafana_folder="Jarvis"}',
    truncatedAlerts: 0,
    title: `[${status.toUpperCase()}:1] Service down Jarvis`,
    state: status === 'firing' ? 'alerting' : 'ok',
    message: '',
  };
}

// Quiet hours around now, on the admin's clock (UTC until set): only urgent kinds go through.
function quietHoursAroundNow() {
  const at = (offsetMs: number) => new Date(Date.now() + offsetMs).toISOString().slice(11, 16);
  return { start: at(-3_600_000), end: at(3_600_000) };
}

describe("Grafana's alerts to the admin's channels", () => {
  let fixture: StackFixture;
  let webhook: HttpRecorder;

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${fixture.adminKey}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await response.text();
    return { status: response.status, body: text ? (JSON.parse(text) as unknown) : undefined };
  };
  const alertDeliveries = async (): Promise<Delivery[]> => {
    const reply = await api('GET', '/v1/notifications/deliveries');
    expect(reply.status).toBe(200);
    return DeliveriesListResponse.parse(reply.body).deliveries.filter((d) => d.kind === 'alert');
  };
  const postAlerts = async (status: 'firing' | 'resolved') => {
    const reply = await api('POST', '/v1/admin/alerts', grafanaPayload(status));
    expect(reply, JSON.stringify(reply.body)).toEqual({ status: 202, body: { accepted: 1 } });
  };

  beforeAll(async () => {
    webhook = await startHttpRecorder();
    fixture = await startStackFixture({ GRAFANA_URL });
    // Set up as an admin would on a new install: no `events`, so the default kinds, alerts among
    // them.
    const put = await api('PUT', '/v1/notifications/channels/webhook', {
      url: `${webhook.url}/alerts`,
      secret: WEBHOOK_SECRET,
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const settings = await api('PUT', '/v1/notifications/settings', {
      quietHours: quietHoursAroundNow(),
    });
    expect(settings.status, JSON.stringify(settings.body)).toBe(200);
  });

  afterAll(async () => {
    await fixture?.close();
    await webhook?.close();
  });

  it('delivers a firing alert, signed, through quiet hours, once however often Grafana retries', async () => {
    await postAlerts('firing');
    const request = await waitFor(() => webhook.requests.find((r) => r.path === '/alerts'), {
      timeoutMs: 30_000,
      what: 'the alert at the webhook',
    });
    const timestamp = String(request.headers['x-jarvis-timestamp']);
    const signature = createHmac('sha256', WEBHOOK_SECRET)
      .update(`${timestamp}.${request.body}`)
      .digest('hex');
    expect(request.headers['x-jarvis-signature']).toBe(`sha256=${signature}`);
    const body = JSON.parse(request.body) as Record<string, unknown>;
    expect(body).toMatchObject({
      id: `alert:${FINGERPRINT}:2026-11-28T19:51:03.157Z:firing`,
      type: 'alert',
      title: '[FIRING] Service down: memory',
      text: expect.stringContaining('memory has been down for 2 minutes'),
      // Into the install's own Grafana: the rule's page, as the payload named it.
      url: `${GRAFANA_URL}/alerting/grafana/jarvis-service-down/view?orgId=1`,
    });

    // Grafana sends the same notification again (a retry, a repeat of its group), twice.
    await postAlerts('firing');
    await postAlerts('firing');
    await expect
      .poll(alertDeliveries, { timeout: 15_000 })
      .toEqual([expect.objectContaining({ channel: 'webhook', status: 'sent', eventId: body.id })]);
    // Long enough for a second delivery to have been made and sent, had there been one.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(webhook.requests.filter((r) => r.path === '/alerts')).toHaveLength(1);
    expect(await alertDeliveries()).toHaveLength(1);
  });

  it('holds the all-clear until quiet hours end', async () => {
    await postAlerts('resolved');
    await expect
      .poll(async () => (await alertDeliveries()).find((d) => d.eventId.endsWith(':resolved')), {
        timeout: 15_000,
      })
      .toMatchObject({ channel: 'webhook', status: 'held' });
    expect(webhook.requests.filter((r) => r.path === '/alerts')).toHaveLength(1);
  });
});
