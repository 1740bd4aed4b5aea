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

// The agent searching the web through a self-hosted SearXNG, as compose's `search` profile runs
// it: the fake model calls web_search, the tools service asks a local stand-in that answers in
// SearXNG's JSON format, and the results reach the model's next request. The stand-in is on
// loopback and OUTBOUND_ALLOWED_HOSTS names nothing: web_search reaches the address SEARXNG_URL
// gives, and web_fetch is still refused that address.
describe('web search', () => {
  let fixture: StackFixture;
  let key: string;
  let db: pg.Client;
  let searxng: TestSite;
  let searxngUrl: string;
  // The query string of each request the stand-in got.
  const asked: URLSearchParams[] = [];

  beforeAll(async () => {
    searxng = await startTestSite((request, response) => {
      const url = new URL(request.url ?? '/', 'http://searxng');
      if (url.pathname !== '/search') {
        response.writeHead(404).end();
        return;
      }
      asked.push(url.searchParams);
      // As SearXNG answers when json is not in its search.formats.
      if (url.searchParams.get('format') !== 'json') {
        response.writeHead(403, { 'content-type': 'text/html' }).end('<h1>403 Forbidden</h1>');
        return;
      }
      const result = (path: string, title: string, content: string, position: number) => ({
        url: `${searxngUrl}${path}`,
        title,
        content,
        thumbnail: '',
        engine: 'duckduckgo',
        template: 'default.html',
        parsed_url: ['http', new URL(searxngUrl).host, path, '', '', ''],
        img_src: '',
        priority: '',
        engines: ['duckduckgo'],
        positions: [position],
        score: 1 / position,
        category: 'general',
        publishedDate: null,
      });
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          query: url.searchParams.get('q'),
          number_of_results: 0,
          results: [
            result('/tram-28', 'Tram 28 timetable', 'Tram 28 runs until 23:00 every day.', 1),
            result('/carris', 'Carris', 'Buses and trams in Lisbon.', 2),
          ],
          answers: [],
          corrections: [],
          infoboxes: [],
          suggestions: [],
          unresponsive_engines: [],
        }),
      );
    });
    searxngUrl = searxng.url;
    fixture = await startStackFixture({ SEARXNG_URL: searxngUrl, OUTBOUND_ALLOWED_HOSTS: '' });
    key = (await fixture.createUser('sofia')).apiKey;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    await waitForToolsOffered(fixture, key, ['web_search']);
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
    await stopTestSite(searxng);
  });

  it('searches for the model, which reads the results as untrusted data', async () => {
    onTurn(fixture, (results) =>
      results === 0
        ? { toolCalls: [{ name: 'web_search', arguments: { query: 'lisbon tram 28 hours' } }] }
        : { content: 'Tram 28 runs until 23:00.' },
    );
    asked.length = 0;

    const reply = await chat(fixture, key, 'Until when does tram 28 run?');

    expect(reply.reply.content).toBe('Tram 28 runs until 23:00.');
    expect(asked.map((query) => [query.get('q'), query.get('format')])).toEqual([
      ['lisbon tram 28 hours', 'json'],
    ]);
    const [content] = toolResults(fixture);
    expect(JSON.parse(content ?? '{}')).toEqual({
      notice: expect.stringMatching(/^Untrusted page data/),
      query: 'lisbon tram 28 hours',
      results: [
        {
          title: 'Tram 28 timetable',
          url: `${searxngUrl}/tram-28`,
          snippet: 'Tram 28 runs until 23:00 every day.',
        },
        { title: 'Carris', url: `${searxngUrl}/carris`, snippet: 'Buses and trams in Lisbon.' },
      ],
    });
    const { rows } = await db.query<{ kind: string; name: string; status: string }>(
      'SELECT kind, name, status FROM orchestrator.run_steps WHERE run_id = $1 ORDER BY attempt, seq',
      [reply.runId],
    );
    expect(rows).toEqual([
      { kind: 'recall', name: 'memory.recall', status: 'ok' },
      { kind: 'model', name: 'openai/fake-chat', status: 'ok' },
      { kind: 'tool', name: 'web_search', status: 'ok' },
      { kind: 'model', name: 'openai/fake-chat', status: 'ok' },
    ]);
  });

  it("does not open the search provider's private address to web_fetch", async () => {
    onTurn(fixture, (results) =>
      results === 0
        ? { toolCalls: [{ name: 'web_fetch', arguments: { url: `${searxngUrl}/search?q=x` } }] }
        : { content: 'That address is refused.' },
    );
    asked.length = 0;

    const reply = await chat(fixture, key, 'Read the search page itself.');

    expect(reply.reply.content).toBe('That address is refused.');
    expect(toolResults(fixture)[0]).toMatch(
      /refused to connect: 127\.0\.0\.1 is a private or local/,
    );
    expect(asked).toHaveLength(0);
  });
});
