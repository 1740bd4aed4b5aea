import { randomUUID } from 'node:crypto';
import { createSocket, type Socket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import { catchBusError } from '@jarvis/bus/testing';
import { toolsInvoke } from '@jarvis/contracts';
import { loopbackNamesInHosts, startTestSite, stopTestSite, type TestSite } from '@jarvis/testkit';
import { chromium } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserRig, startBrowserRig } from './browser-test-fixture';
import { createBrowserOpenTool } from './browser-tools';

// The SSRF set of issue 27 for the browser: real Chromium (sandboxed, behind the guarded proxy,
// as main.ts builds it) asked through tools.invoke to reach a loopback listener that counts
// every TCP connection, by navigation, by a redirect from an allowed page, by subresources
// (<img>, fetch, <iframe>, a websocket) and by names that resolve to it; and WebRTC asked to
// send STUN to a loopback UDP socket that counts its packets. Both counts must stay 0. Each
// probe page also reaches the allowed site the same way, which must see it: the probe works.

const USER_ID = randomUUID();
const REFUSED = /^refused to connect: /;

let target: TestSite;
// The same counting target on ::1, where the machine has IPv6 loopback.
let target6: TestSite | undefined;
let udp: { socket: Socket; port: number; packets: number };
// The allowed site ("public-looking": OUTBOUND_ALLOWED_HOSTS names its host:port): it redirects,
// and serves the probe pages. `controls` counts the requests the probes made to it.
let site: TestSite;
const controls = { requests: 0, upgrades: 0 };
let rig: BrowserRig;

function probePage(kind: string, to: string, control: string): string {
  const steps: Record<string, string> = {
    img: `<img src="${to}"><img src="${control}">`,
    iframe: `<iframe src="${to}"></iframe><iframe src="${control}"></iframe>`,
    fetch: `<script>
      Promise.allSettled([fetch(${JSON.stringify(to)}), fetch(${JSON.stringify(control)})])
        .then(() => { document.title = 'done'; });
    </script>`,
    ws: `<script>
      let left = 2;
      for (const url of [${JSON.stringify(to)}, ${JSON.stringify(control)}]) {
        const socket = new WebSocket(url);
        const settle = () => { left -= 1; if (left === 0) document.title = 'done'; };
        socket.onerror = settle;
        socket.onclose = settle;
      }
    </script>`,
  };
  const title = kind === 'img' || kind === 'iframe' ? 'done' : 'probing';
  return `<!doctype html><html><head><title>${title}</title></head><body><p>probe</p>${steps[kind]}</body></html>`;
}

// STUN to the UDP counter, by address and by name; 'done' after the candidates had time to go.
function webrtcPage(port: number): string {
  return `<!doctype html><html><head><title>probing</title></head><body><script>
    const pc = new RTCPeerConnection({ iceServers: [
      { urls: 'stun:127.0.0.1:${port}' }, { urls: 'stun:localhost:${port}' },
      { urls: 'turn:127.0.0.1:${port}?transport=udp', username: 'u', credential: 'p' },
    ] });
    pc.createDataChannel('probe');
    pc.createOffer().then((offer) => pc.setLocalDescription(offer));
    setTimeout(() => { document.title = 'done'; }, 2500);
  </script></body></html>`;
}

beforeAll(async () => {
  const secret = (_request: unknown, response: import('node:http').ServerResponse) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end('<p>the loopback secret</p>');
  };
  target = await startTestSite(secret);
  target6 = await startTestSite(secret, '::1', target.port).catch(() => undefined);
  // A websocket handshake to the target still opens a connection, which is what is counted.
  const socket = createSocket('udp4');
  udp = { socket, port: 0, packets: 0 };
  socket.on('message', () => {
    udp.packets += 1;
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  udp.port = (socket.address() as AddressInfo).port;

  site = await startTestSite((request, response) => {
    const url = new URL(request.url ?? '/', 'http://site');
    const to = url.searchParams.get('to') ?? '/';
    if (url.pathname === '/control') {
      controls.requests += 1;
      response.writeHead(200, { 'content-type': 'text/plain' });
      response.end('control');
      return;
    }
    if (url.pathname === '/redirect') {
      response.writeHead(302, { location: to });
      response.end();
      return;
    }
    if (url.pathname === '/webrtc') {
      response.writeHead(200, { 'content-type': 'text/html' });
      response.end(webrtcPage(udp.port));
      return;
    }
    const kind = url.pathname.slice(1);
    const control =
      kind === 'ws'
        ? `ws://127.0.0.1:${site.port}/control`
        : `http://127.0.0.1:${site.port}/control`;
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end(probePage(kind, to, control));
  });
  site.server.on('upgrade', (_request, upgraded) => {
    controls.upgrades += 1;
    upgraded.destroy();
  });
  rig = await startBrowserRig({
    allowed: `127.0.0.1:${site.port}`,
    pool: { pageTimeoutMs: 5_000 },
    register(registry, { guard, pool }) {
      registry.register(createBrowserOpenTool({ guard, pool }));
    },
  });
}, 60_000);

afterAll(async () => {
  await rig?.stop();
  await stopTestSite(site);
  await stopTestSite(target);
  await stopTestSite(target6);
  udp?.socket.close();
});

function hits(): number {
  return target.connections + (target6?.connections ?? 0);
}

function open(url: string, runId: string) {
  return rig.client.request(
    toolsInvoke,
    { userId: USER_ID, runId, name: 'browser_open', arguments: { url }, timeoutMs: 15_000 },
    { timeoutMs: 17_000 },
  );
}

// The probe's own script has finished (fetch and websockets settle after the load event).
async function waitForProbe(runId: string) {
  await rig.pool.useCurrentPage(
    { userId: USER_ID, runId },
    ({ page }) =>
      page.waitForFunction(() => document.title === 'done', undefined, { timeout: 8_000 }),
    AbortSignal.timeout(10_000),
  );
}

declare const document: { title: string };

describe('browser SSRF set (issue 27)', { timeout: 240_000 }, () => {
  it('reaches no loopback listener by navigation, redirect, subresource, websocket or name', async () => {
    const port = target.port;
    // The other names /etc/hosts maps to loopback (localhost is in each list already): Chromium
    // hands them to the proxy, whose checked lookup resolves them.
    const namesInHosts = loopbackNamesInHosts().filter((name) => name !== 'localhost');
    const loopbacks = [
      '127.0.0.1',
      'localhost',
      'LocalHost',
      '[::1]',
      '[::ffff:127.0.0.1]',
      '0x7f000001',
      '2130706433',
      '0177.0.0.1',
      '127.1',
      '0.0.0.0',
      '[::]',
      ...namesInHosts,
    ];
    const navigations = [
      ...loopbacks.map((host) => `http://${host}:${port}/secret`),
      `https://127.0.0.1:${port}/secret`,
      `https://localhost:${port}/secret`,
      `http://169.254.169.254/latest/meta-data/`,
    ];
    const via = (to: string) =>
      `http://127.0.0.1:${site.port}/redirect?to=${encodeURIComponent(to)}`;
    const redirects = [
      `http://127.0.0.1:${port}/secret`,
      `http://localhost:${port}/secret`,
      `http://[::1]:${port}/secret`,
      `http://0x7f000001:${port}/secret`,
      `http://2130706433:${port}/secret`,
      `http://[::ffff:127.0.0.1]:${port}/secret`,
      `http://0.0.0.0:${port}/secret`,
      `http://[::]:${port}/secret`,
      `https://localhost:${port}/secret`,
      `//127.0.0.1:${port}/secret`,
      ...namesInHosts.map((name) => `http://${name}:${port}/secret`),
      // Not the listener, but as refused: metadata, private, CGNAT, benchmarking ranges.
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://10.0.0.1/',
      'http://100.64.0.1/',
      'http://198.18.0.1/',
    ].map(via);
    const rows: { url: string; outcome: string }[] = [];
    const failures: string[] = [];

    for (const url of [...navigations, ...redirects]) {
      const before = hits();
      const error = await catchBusError(open(url, randomUUID())).catch((problem: Error) => problem);
      const outcome =
        'code' in error ? `${error.code}: ${error.message}` : `loaded (${error.message})`;
      rows.push({ url, outcome });
      if (!REFUSED.test(error.message) || hits() !== before) failures.push(`${url} → ${outcome}`);
    }

    const subresourceHosts = ['127.0.0.1', 'localhost', '[::1]', ...namesInHosts];
    for (const kind of ['img', 'iframe', 'fetch', 'ws']) {
      for (const host of subresourceHosts) {
        const scheme = kind === 'ws' ? 'ws' : 'http';
        const to = `${scheme}://${host}:${port}/secret`;
        const url = `http://127.0.0.1:${site.port}/${kind}?to=${encodeURIComponent(to)}`;
        const runId = randomUUID();
        const before = { hits: hits(), controls: controls.requests + controls.upgrades };
        await open(url, runId);
        await waitForProbe(runId);
        await rig.pool.closeRun(runId);
        const reachedControl = controls.requests + controls.upgrades > before.controls;
        const outcome = `page loaded; ${kind} to ${to}: ${hits() - before.hits} connections; control reached: ${reachedControl}`;
        rows.push({ url: `${kind} → ${to}`, outcome });
        if (hits() !== before.hits || !reachedControl) failures.push(`${kind} ${to} → ${outcome}`);
      }
    }

    console.table(rows);
    expect(rows.length).toBeGreaterThanOrEqual(30);
    expect(failures).toEqual([]);
    expect(hits()).toBe(0);
  });

  it('sends no WebRTC UDP to loopback, where a browser without the flags does', async () => {
    const runId = randomUUID();
    await open(`http://127.0.0.1:${site.port}/webrtc`, runId);
    await waitForProbe(runId);
    await rig.pool.closeRun(runId);
    expect(udp.packets).toBe(0);

    // The probe page works: a plain Chromium (no proxy, no WebRTC policy) sends STUN to it.
    // Only for this control, against the test's own page, does it run without its sandbox.
    const plain = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true });
    try {
      const page = await plain.newPage();
      await page.goto(`http://127.0.0.1:${site.port}/webrtc`);
      await page.waitForFunction(() => document.title === 'done', undefined, { timeout: 8_000 });
    } finally {
      await plain.close();
    }
    expect(udp.packets).toBeGreaterThan(0);
  });
});
