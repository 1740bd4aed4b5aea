import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ChatResponse } from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  type FakeReply,
  isTurnRequest,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The agent searching the web through a self-hosted SearXNG, as compose's `search` profile runs
// it: the fake model calls web_search, the tools service asks a local stand-in that answers in
// SearXNG's JSON format, and the results reach the model's next request. The stand-in is on
// loopback and OUTBOUND_ALLOWED_HOSTS names nothing: web_search reaches the address SEARXNG_URL
// gives, and web_fetch is still refused that address.
describe('web search', () => {
  let fixture: StackFixture;
  let key: string;
  let db: pg.Client;
  let searxng: Server;
  let searxngUrl: string;
  // The query string of each request the stand-in got.
  const asked: URLSearchParams[] = [];

  const offeredTools = (request: FakeLlmRequest | undefined): string[] => {
    const body = request?.body;
    if (typeof body !== 'object' || body === null || !('tools' in body)) return [];
    if (!Array.isArray(body.tools)) return [];
    return body.tools.map((tool: { function?: { name?: string } }) => tool.function?.name ?? '');
  };

  const onTurn = (reply: (toolResults: number) => FakeReply) =>
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool').length;
      return reply(results);
    });

  const chat = async (message: string) => {
    const response = await fixture.chat(key, { message });
    expect(response.status).toBe(200);
    return ChatResponse.parse(await response.json());
  };

  const lastTurnRequest = () => fixture.fake.chatRequests().filter(isTurnRequest).at(-1);

  const toolResults = () =>
    sentMessages(lastTurnRequest())
      .filter((message) => message.role === 'tool')
      .map((message) => message.content ?? '');

  beforeAll(async () => {
    searxng = createServer((request, response) => {
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
    await new Promise<void>((resolve) => searxng.listen(0, '127.0.0.1', resolve));
    searxngUrl = `http://127.0.0.1:${(searxng.address() as AddressInfo).port}`;
    fixture = await startStackFixture({ SEARXNG_URL: searxngUrl, OUTBOUND_ALLOWED_HOSTS: '' });
    key = (await fixture.createUser('sofia')).apiKey;
    db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    // The orchestrator may have asked for the tools service's list before that was up.
    onTurn(() => ({ content: 'Here.' }));
    await waitFor(
      async () => {
        await chat('Are you there?');
        return offeredTools(lastTurnRequest()).includes('web_search');
      },
      { timeoutMs: 30_000, intervalMs: 500, what: 'web_search to be offered to the model' },
    );
  });

  afterAll(async () => {
    await db?.end();
    await fixture?.close();
    searxng?.closeAllConnections();
    await new Promise((resolve) => searxng?.close(resolve));
  });

  it('searches for the model, which reads the results as untrusted data', async () => {
    onTurn((results) =>
      results === 0
        ? { toolCalls: [{ name: 'web_search', arguments: { query: 'lisbon tram 28 hours' } }] }
        : { content: 'Tram 28 runs until 23:00.' },
    );
    asked.length = 0;

    const reply = await chat('Until when does tram 28 run?');

    expect(reply.reply.content).toBe('Tram 28 runs until 23:00.');
    expect(asked.map((query) => [query.get('q'), query.get('format')])).toEqual([
      ['lisbon tram 28 hours', 'json'],
    ]);
    const [content] = toolResults();
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
    onTurn((results) =>
      results === 0
        ? { toolCalls: [{ name: 'web_fetch', arguments: { url: `${searxngUrl}/search?q=x` } }] }
        : { content: 'That address is refused.' },
    );
    asked.length = 0;

    const reply = await chat('Read the search page itself.');

    expect(reply.reply.content).toBe('That address is refused.');
    expect(toolResults()[0]).toMatch(/refused to connect: 127\.0\.0\.1 is a private or local/);
    expect(asked).toHaveLength(0);
  });
});
