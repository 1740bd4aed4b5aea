import {
  type StackFixture,
  startStackFixture,
  startTestSite,
  stopTestSite,
  type TestSite,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chat, onTurn, toolResults, waitForToolsOffered } from './tool-turns';

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
  let site: TestSite;
  let siteUrl: string;
  let orders = 0;

  const call = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  beforeAll(async () => {
    site = await startTestSite((request, response) => {
      if (request.url === '/ordered' && request.method === 'POST') {
        orders += 1;
        response.writeHead(204);
        response.end();
        return;
      }
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      response.end(request.url === '/basket' ? ORDER : TIMETABLE);
    });
    siteUrl = site.url;
    // Chromium's first start and page load take seconds on a busy machine.
    fixture = await startStackFixture({ TOOL_TIMEOUT_MS: '30000' });
    key = (await fixture.createUser('ines')).apiKey;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    await waitForToolsOffered(fixture, key, ['browser_open', 'browser_act']);
  }, 120_000);

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
    await stopTestSite(site);
  });

  it('opens a page in the browser and gives the model the text its JavaScript wrote', async () => {
    onTurn(fixture, (results) =>
      results === 0
        ? { toolCalls: [{ name: 'browser_open', arguments: { url: `${siteUrl}/ferry` } }] }
        : { content: 'The last ferry leaves at 01:40.' },
    );

    const reply = await chat(fixture, key, 'When is the last ferry? The page needs JavaScript.');

    expect(reply.reply.content).toBe('The last ferry leaves at 01:40.');
    const [result] = toolResults(fixture);
    expect(JSON.parse(result ?? '{}')).toMatchObject({
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
    onTurn(fixture, (results) => {
      if (results === 0) {
        return { toolCalls: [{ name: 'browser_open', arguments: { url: `${siteUrl}/basket` } }] };
      }
      if (results === 1) {
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

    const paused = await chat(fixture, key, 'Buy the ferry ticket in my basket.');

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
    const act = toolResults(fixture).at(-1);
    expect(JSON.parse(act ?? '{}')).toMatchObject({
      action: 'click',
      url: `${siteUrl}/basket`,
      text: expect.stringContaining('Order placed'),
    });
  }, 90_000);
});
