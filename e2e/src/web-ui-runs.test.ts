import { ChatResponse, RunsGetResponse } from '@jarvis/contracts';
import { isTurnRequest, type StackFixture, sentMessages, startStackFixture } from '@jarvis/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';

// A run's page in Debian's Chromium (./browser.ts), against the whole stack with GRAFANA_URL set:
// its steps drawn on a timeline (bars placed by start, sized by duration, under the strict
// content security policy) and its trace id linked to Grafana's Explore on Tempo.
const GRAFANA_URL = 'https://jarvis.example.test/grafana';

describe('the run page in a browser', () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;
  let runId: string;

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };

  beforeAll(async () => {
    fixture = await startStackFixture({ GRAFANA_URL });
    key = (await fixture.createUser('tess')).apiKey;
    // One tool call, then the answer: recall, two model calls and a tool on the timeline.
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const isAnswered = sentMessages(request).some((message) => message.role === 'tool');
      if (isAnswered) return { content: 'Nothing about plants yet.' };
      return { toolCalls: [{ name: 'memory_search', arguments: { query: 'plants' } }] };
    });
    const chat = await api('POST', '/v1/chat', { message: 'What do you know about my plants?' });
    expect(chat.status, JSON.stringify(chat.body)).toBe(200);
    runId = ChatResponse.parse(chat.body).runId;
    browser = await openBrowserPage();
    page = browser.page;
    await signIn(page, fixture.stack.gatewayUrl, key);
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it("draws the run's steps on a timeline, a bar each, placed by start and sized by duration", async () => {
    const { run } = RunsGetResponse.parse((await api('GET', `/v1/runs/${runId}`)).body);
    expect(run.steps.map((step) => step.kind)).toEqual(
      expect.arrayContaining(['recall', 'model', 'tool']),
    );
    await page.goto(`${fixture.stack.gatewayUrl}/runs/${runId}`);
    const timeline = page.getByRole('list', { name: 'Timeline' });
    await timeline.waitFor();

    const rows = timeline.getByRole('listitem');
    await expect.poll(() => rows.count()).toBe(run.steps.length);
    // Each row says in words what its bar shows.
    const tool = run.steps.find((step) => step.kind === 'tool');
    const toolRow = rows.filter({ hasText: 'memory_search' });
    expect(await toolRow.textContent()).toMatch(/tool: \d+(\.\d)? m?s, at \+\d+(\.\d)? m?s/);
    expect(tool?.name).toBe('memory_search');

    // Where the browser drew each bar, within its track, against where the step was.
    const drawn = await timeline.locator('.timeline-row').evaluateAll((elements) =>
      elements.map((row) => {
        const track = row.querySelector('.timeline-track')?.getBoundingClientRect();
        const bar = row.querySelector('.timeline-bar');
        const box = bar?.getBoundingClientRect();
        return {
          kind: [...(bar?.classList ?? [])].find((name) => /^timeline-(?!bar)/.test(name)),
          left: box && track ? (box.left - track.left) / track.width : -1,
          width: box && track ? box.width / track.width : -1,
          colour: bar
            ? (bar.ownerDocument.defaultView?.getComputedStyle(bar).backgroundColor ?? '')
            : '',
        };
      }),
    );
    const origin = Math.min(...run.steps.map((step) => Date.parse(step.startedAt)));
    const end = Math.max(...run.steps.map((step) => Date.parse(step.startedAt) + step.durationMs));
    const span = Math.max(end - origin, 1);
    run.steps.forEach((step, index) => {
      const bar = drawn[index];
      expect(bar?.kind).toBe(`timeline-${step.kind}`);
      // Within a couple of pixels of the track's width (bars are at least 3 px wide).
      expect(bar?.left).toBeCloseTo((Date.parse(step.startedAt) - origin) / span, 1);
      expect(bar?.width).toBeGreaterThan(0);
      expect(bar?.width).toBeLessThanOrEqual(Math.max(step.durationMs / span, 0.02) + 0.01);
    });
    // Kinds have colours of their own.
    const colourOf = (kind: string) => drawn.find((bar) => bar.kind === `timeline-${kind}`)?.colour;
    expect(new Set([colourOf('recall'), colourOf('model'), colourOf('tool')]).size).toBe(3);
    await browser.shoot('run-timeline-desktop');
  });

  it("links the trace id to Grafana's Explore on Tempo", async () => {
    const { run } = RunsGetResponse.parse((await api('GET', `/v1/runs/${runId}`)).body);
    expect(run.traceId).toMatch(/^[0-9a-f]{32}$/);
    const link = page.getByRole('link', { name: 'Open trace in Grafana' });
    const href = new URL((await link.getAttribute('href')) ?? '');

    expect(`${href.origin}${href.pathname}`).toBe(`${GRAFANA_URL}/explore`);
    expect(href.searchParams.get('schemaVersion')).toBe('1');
    const panes = Object.values(
      JSON.parse(href.searchParams.get('panes') ?? '{}') as Record<string, unknown>,
    );
    expect(panes).toEqual([
      expect.objectContaining({
        datasource: 'tempo',
        queries: [
          expect.objectContaining({
            datasource: { type: 'tempo', uid: 'tempo' },
            queryType: 'traceql',
            query: run.traceId,
          }),
        ],
      }),
    ]);
    expect(await link.getAttribute('target')).toBe('_blank');
    expect(await link.getAttribute('rel')).toContain('noopener');
  });

  it('fits a phone screen, and broke nothing on the page', async () => {
    await page.setViewportSize(PHONE);
    await page.getByRole('list', { name: 'Timeline' }).waitFor();
    expect(await page.evaluate('document.documentElement.scrollWidth > window.innerWidth')).toBe(
      false,
    );
    await browser.shoot('run-timeline-phone');
    // A style attribute the policy refused, or a script error, would be here.
    expect(browser.unexpectedProblems()).toEqual([]);
  });
});
