import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createService, type Service } from '@jarvis/service-kit';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createWebUiRouter } from './web-ui';

const INDEX =
  '<!doctype html><title>Jarvis</title><script type="module" src="/assets/app-1a2b.js"></script>';

type Started = { url: string; service: Service };

async function startGateway(directory: string): Promise<Started> {
  const service = createService({
    name: 'web-ui-test',
    port: 0,
    host: '127.0.0.1',
    logger: createLogger('web-ui-test', 'silent'),
    metrics: createMetrics('web-ui-test'),
    checks: {},
    dependencyLossExitMs: 60_000,
    onStop: async () => {},
    exit: () => {},
  });
  service.app.get('/v1/ping', (_req, res) => {
    res.json({ ok: true });
  });
  service.app.use(createWebUiRouter({ directory }));
  const { port } = await service.start();
  return { url: `http://127.0.0.1:${port}`, service };
}

describe('the web UI route', () => {
  let dir: string;
  let built: Started;
  let missing: Started;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'web-ui-'));
    await mkdir(join(dir, 'assets'));
    await writeFile(join(dir, 'index.html'), INDEX);
    await writeFile(join(dir, 'favicon.svg'), '<svg xmlns="http://www.w3.org/2000/svg"/>');
    await writeFile(join(dir, 'assets', 'app-1a2b.js'), 'console.log("jarvis")');
    await writeFile(join(dir, 'sw.js'), 'self.addEventListener("fetch", () => {});');
    await writeFile(join(dir, 'manifest.webmanifest'), '{"name": "Jarvis"}');
    built = await startGateway(dir);
    missing = await startGateway(join(dir, 'not-built'));
  });

  afterAll(async () => {
    await built?.service.stop();
    await missing?.service.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('answers index.html, never cached unchecked, at / and on every client route', async () => {
    for (const path of [
      '/',
      '/chat',
      '/memory/facts',
      '/runs/0b6c4b8e-1f1e-4a57-9f0a-4c1f0e1d2a3b',
      '/schedules',
      '/settings',
    ]) {
      const response = await fetch(`${built.url}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get('content-type')).toMatch(/^text\/html/);
      expect(response.headers.get('cache-control')).toBe('no-cache');
      expect(await response.text()).toBe(INDEX);
    }
  });

  it('serves hashed assets with a year-long immutable cache, and other files revalidated', async () => {
    const asset = await fetch(`${built.url}/assets/app-1a2b.js`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/javascript/);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');

    const icon = await fetch(`${built.url}/favicon.svg`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('cache-control')).toBe('no-cache');
  });

  it('serves the service worker and the web manifest with the types browsers require', async () => {
    // A service worker script must come as JavaScript, and be revalidated: its new bytes are
    // how a browser learns of a new app shell.
    const worker = await fetch(`${built.url}/sw.js`);
    expect(worker.status).toBe(200);
    expect(worker.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(worker.headers.get('cache-control')).toBe('no-cache');

    const manifest = await fetch(`${built.url}/manifest.webmanifest`);
    expect(manifest.status).toBe(200);
    expect(manifest.headers.get('content-type')).toMatch(/^application\/manifest\+json/);
    expect(manifest.headers.get('cache-control')).toBe('no-cache');
  });

  it('leaves the API and unknown paths to their JSON 404, and a missing asset is not the app', async () => {
    expect(await (await fetch(`${built.url}/v1/ping`)).json()).toEqual({ ok: true });
    for (const path of ['/v1/nothing', '/nowhere', '/assets/gone-9z9z.js', '/../etc/passwd']) {
      const response = await fetch(`${built.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.headers.get('content-type'), path).toMatch(/^application\/json/);
    }
    const post = await fetch(`${built.url}/chat`, { method: 'POST' });
    expect(post.status).toBe(404);
  });

  it('says how to build the UI when there is no build', async () => {
    const response = await fetch(`${missing.url}/`);
    expect(response.status).toBe(404);
    const body = (await response.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('not_found');
    expect(body.error.message).toMatch(/web UI is not built/);
  });
});
