import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChatResponse } from '@jarvis/contracts';
import {
  isTurnRequest,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// Its text is there only once its script has run.
const TIMETABLE = `<!doctype html><html><head><title>Ferry</title></head><body><main id="out"></main>
  <script>
    document.title = 'Ferry timetable';
    document.getElementById('out').textContent = 'The last ferry to Cacilhas leaves at ' + '01:40' + '.';
  </script></body></html>`;
// Clicking the button changes something in the world (here: the site's order count).
const ORDER = `<!doctype html><html><head><title>Basket</title></head><body>
  <p id="status">One ticket in the basket</p>
  <button onclick="fetch('/ordered', { method: 'POST' }).then(() => {
    document.getElementById('status').textContent = 'Order placed';
  })">Place order</button></body></html>`;

// The browser tools as the agent uses them, through the whole stack: the fake model calls
// browser_open on a page this test serves and reads what its JavaScript wrote; then
// browser_act, which is risky: the run pauses, nothing is clicked until the user approves, and
// the click happens on the page the run opened before the pause.
describe('browser tools', () => {
  let fixture: StackFixture;
  let key: string;
  let db: pg.Client;
  let site: Server;
  let siteUrl: string;
  let orders = 0;

  const offers = (body: unknown, name: string): boolean => {
    if (typeof body !== 'object' || body === null || !('tools' in body)) return false;
    if (!Array.isArray(body.tools)) return false;
    return body.tools.some(
      (tool: { function?: { name?: string } }) => tool.function?.name === name,
    );
  };

  const toolResults = () =>
    sentMessages(fixture.fake.chatRequests().filter(isTurnRequest).at(-1)).filter(
      (message) => message.role === 'tool',
    );

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  const chat = async (message: string) => {
    const response = await fixture.chat(key, { message });
    expect(response.status).toBe(200);
    return ChatResponse.parse(await response.json());
  };

  beforeAll(async () => {
    site = createServer((request, response) => {
      if (request.url === '/ordered' && request.method === 'POST') {
        orders += 1;
        response.writeHead(204);
        response.end();
        return;
      }
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(request.url === '/basket' ? ORDER : TIMETABLE);
    });
    await new Promise<void>((resolve) => site.listen(0, '127.0.0.1', resolve));
    siteUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    // Chromium's first start and page load take seconds on a busy machine.
    fixture = await startStackFixture({ TOOL_TIMEOUT_MS: '30000' });
    key = (await fixture.createUser('ines')).apiKey;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    fixture.fake.onChat(() => ({ content: 'Here.' }));
    await waitFor(
      async () => {
        await chat('Are you there?');
        const last = fixture.fake.chatRequests().filter(isTurnRequest).at(-1);
        return offers(last?.body, 'browser_open') && offers(last?.body, 'browser_act');
      },
      { timeoutMs: 30_000, intervalMs: 500, what: 'the browser tools to be offered to the model' },
    );
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
    site?.closeAllConnections();
    await new Promise((resolve) => site?.close(resolve));
  });

  it('opens a page in the browser and gives the model the text its JavaScript wrote', async () => {
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool');
      if (results.length === 0) {
        return { toolCalls: [{ name: 'browser_open', arguments: { url: `${siteUrl}/ferry` } }] };
      }
      return { content: 'The last ferry leaves at 01:40.' };
    });

    const reply = await chat('When is the last ferry? The page needs JavaScript.');

    expect(reply.reply.content).toBe('The last ferry leaves at 01:40.');
    const [result] = toolResults();
    expect(JSON.parse(result?.content ?? '{}')).toMatchObject({
      notice: expect.stringMatching(/^Untrusted page data/),
      url: `${siteUrl}/ferry`,
      title: 'Ferry timetable',
      text: 'The last ferry to Cacilhas leaves at 01:40.',
    });
    const { rows } = await db.query<{ name: string; status: string }>(
      `SELECT name, status FROM orchestrator.run_steps WHERE run_id = $1 AND kind = 'tool'`,
      [reply.runId],
    );
    expect(rows).toEqual([{ name: 'browser_open', status: 'ok' }]);
  }, 60_000);

  it('clicks on the open page only after the user approves', async () => {
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool');
      if (results.length === 0) {
        return { toolCalls: [{ name: 'browser_open', arguments: { url: `${siteUrl}/basket` } }] };
      }
      if (results.length === 1) {
        return {
          toolCalls: [
            {
              name: 'browser_act',
              arguments: { action: 'click', role: 'button', name: 'Place order' },
            },
          ],
        };
      }
      return { content: 'Your order is placed.' };
    });

    const paused = await chat('Buy the ferry ticket in my basket.');

    expect(paused.approval).toMatchObject({
      toolName: 'browser_act',
      arguments: { action: 'click', role: 'button', name: 'Place order' },
    });
    expect(orders).toBe(0);

    const decided = await call('POST', `/v1/approvals/${paused.approval?.id}`, {
      decision: 'approve',
    });

    expect(decided.status).toBe(200);
    expect(decided.body).toMatchObject({
      decided: { status: 'approved' },
      reply: { content: 'Your order is placed.' },
      runId: paused.runId,
    });
    expect(orders).toBe(1);
    // The click was on the page opened before the pause: its script's answer is in the result.
    const act = toolResults().at(-1);
    expect(JSON.parse(act?.content ?? '{}')).toMatchObject({
      action: 'click',
      url: `${siteUrl}/basket`,
      text: expect.stringContaining('Order placed'),
    });
  }, 90_000);
});
