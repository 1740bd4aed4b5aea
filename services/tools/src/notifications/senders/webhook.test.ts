import { createHmac, timingSafeEqual } from 'node:crypto';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Notification, StoredChannel } from '../channel';
import {
  type HttpReceiver,
  type ReceivedRequest,
  startHttpReceiver,
} from '../http-receiver-fixture';
import { createWebhookSender } from './webhook';

const guard = createOutboundGuard(OutboundAllowedHosts.parse('127.0.0.1'));
const SECRET = 'whsec-test-0123456789abcdef';

let receiver: HttpReceiver;
beforeAll(async () => {
  receiver = await startHttpReceiver();
});
afterAll(async () => {
  await receiver?.close();
});

function channel(format: 'jarvis' | 'slack' | 'discord'): StoredChannel {
  return {
    userId: '00000000-0000-4000-8000-000000000001',
    type: 'webhook',
    config: { type: 'webhook', url: `${receiver.url}/hooks/in?x=1`, format },
    secrets: { secret: SECRET },
    events: ['mission_report'],
    isConfirmed: true,
    updatedAt: new Date(),
  };
}

const notification: Notification = {
  eventId: 'evt-42',
  kind: 'mission_report',
  occurredAt: '2026-11-28T18:00:00.000Z',
  title: 'Mission done: <laptops> & more',
  text: 'Laptop A wins.',
  url: 'https://jarvis.example.com/missions/m1',
};

// What a receiver does, written from the issue's definition rather than from the sender's code:
// HMAC-SHA256 over "<timestamp>.<raw body>" with the shared secret, compared in constant time.
function isSignatureValid(request: ReceivedRequest, secret: string): boolean {
  const timestamp = String(request.headers['x-jarvis-timestamp']);
  const expected = `sha256=${createHmac('sha256', secret).update(`${timestamp}.${request.body}`).digest('hex')}`;
  const given = Buffer.from(String(request.headers['x-jarvis-signature']));
  return given.length === expected.length && timingSafeEqual(given, Buffer.from(expected));
}

async function sendAs(format: 'jarvis' | 'slack' | 'discord', note = notification) {
  receiver.requests.length = 0;
  await createWebhookSender({ guard }).send(channel(format), note, AbortSignal.timeout(5_000));
  const [request] = receiver.requests;
  if (!request || receiver.requests.length !== 1) throw new Error('expected one request');
  return request;
}

describe('the webhook sender', () => {
  it("POSTs Jarvis's body, signed over the timestamp and the raw body", async () => {
    const before = Math.floor(Date.now() / 1_000);
    const request = await sendAs('jarvis');

    expect(request).toMatchObject({ method: 'POST', path: '/hooks/in?x=1' });
    expect(request.headers['content-type']).toBe('application/json');
    expect(JSON.parse(request.body)).toEqual({
      id: 'evt-42',
      type: 'mission_report',
      occurredAt: '2026-11-28T18:00:00.000Z',
      title: 'Mission done: <laptops> & more',
      text: 'Laptop A wins.',
      url: 'https://jarvis.example.com/missions/m1',
    });
    const timestamp = Number(request.headers['x-jarvis-timestamp']);
    expect(timestamp).toBeGreaterThanOrEqual(before);
    expect(timestamp).toBeLessThanOrEqual(Math.floor(Date.now() / 1_000));
    expect(request.headers['x-jarvis-signature']).toMatch(/^sha256=[0-9a-f]{64}$/);
    expect(isSignatureValid(request, SECRET)).toBe(true);
    // A body changed on the way, or another secret, does not verify.
    expect(
      isSignatureValid({ ...request, body: request.body.replace('A wins', 'B wins') }, SECRET),
    ).toBe(false);
    expect(isSignatureValid(request, `${SECRET}x`)).toBe(false);
    expect(JSON.stringify(request)).not.toContain(SECRET);
  });

  it("sends Slack's {text} and Discord's {content}, signed the same way", async () => {
    const slack = await sendAs('slack');
    expect(JSON.parse(slack.body)).toEqual({
      text: '*Mission done: &lt;laptops&gt; &amp; more*\nLaptop A wins.\n<https://jarvis.example.com/missions/m1|Open in Jarvis>',
    });
    expect(isSignatureValid(slack, SECRET)).toBe(true);

    const discord = await sendAs('discord');
    expect(JSON.parse(discord.body)).toEqual({
      content:
        '**Mission done: <laptops> & more**\nLaptop A wins.\nhttps://jarvis.example.com/missions/m1',
    });
    expect(isSignatureValid(discord, SECRET)).toBe(true);
  });

  it("keeps Discord's content within its 2,000 characters, link included", async () => {
    const discord = await sendAs('discord', { ...notification, text: 'x'.repeat(5_000) });
    const { content } = JSON.parse(discord.body);
    expect(content).toHaveLength(2_000);
    expect(content.endsWith('…\nhttps://jarvis.example.com/missions/m1')).toBe(true);
  });

  it('tells the same event by the same id, however often it is sent', async () => {
    const first = JSON.parse((await sendAs('jarvis')).body);
    const second = JSON.parse((await sendAs('jarvis')).body);
    expect(second.id).toBe(first.id);
  });
});
