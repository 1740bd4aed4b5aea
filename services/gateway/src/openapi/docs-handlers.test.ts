import { ENDPOINTS } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type RouterFixture, startRouterFixture } from '../routes/router-fixture';
import { DOCS_PAGE_CSP } from './docs-page';
import { buildOpenApiDocument } from './openapi-document';

let fixture: RouterFixture;
let baseUrl: string;

beforeAll(async () => {
  fixture = await startRouterFixture('');
  baseUrl = fixture.url;
});

afterAll(async () => {
  await fixture?.stop();
});

describe('GET /v1/openapi.json', () => {
  it('answers the document without a key', async () => {
    const response = await fetch(`${baseUrl}/v1/openapi.json`);

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(await response.json()).toEqual(
      JSON.parse(JSON.stringify(buildOpenApiDocument(ENDPOINTS))),
    );
  });
});

describe('GET /v1/docs', () => {
  it('answers the page without a key, under a policy that lets only its own scripts run', async () => {
    const response = await fetch(`${baseUrl}/v1/docs`);
    const html = await response.text();

    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/html/);
    expect(response.headers.get('content-security-policy')).toBe(DOCS_PAGE_CSP);
    expect(DOCS_PAGE_CSP).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'/);
    // Nothing from another origin: the page must work on a server that is offline.
    expect(html).not.toMatch(/(src|href)="(https?:)?\/\//);
    expect(html).toContain("url: '/v1/openapi.json'");
  });

  it('serves the script and stylesheet the page loads, from the npm package', async () => {
    const html = await (await fetch(`${baseUrl}/v1/docs`)).text();
    const assets = [...html.matchAll(/(?:src|href)="(\/[^"]+)"/g)].map((match) => match[1]);

    expect(assets).toEqual([
      '/v1/docs/assets/swagger-ui.css',
      '/v1/docs/assets/swagger-ui-bundle.js',
    ]);
    const css = await fetch(`${baseUrl}/v1/docs/assets/swagger-ui.css`);
    const script = await fetch(`${baseUrl}/v1/docs/assets/swagger-ui-bundle.js`);

    expect(css.status).toBe(200);
    expect(css.headers.get('content-type')).toMatch(/^text\/css/);
    expect(script.status).toBe(200);
    expect(script.headers.get('content-type')).toMatch(/^(application|text)\/javascript/);
    expect(await script.text()).toContain('SwaggerUIBundle');
  });

  it('serves no other file of the package', async () => {
    const response = await fetch(`${baseUrl}/v1/docs/assets/index.html`);

    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      error: { code: 'bad_request', message: expect.stringMatching(/^file: /) },
    });
  });
});
