import { randomUUID } from 'node:crypto';
import type { RequestListener } from 'node:http';
import type { Bus } from '@jarvis/bus';
import { catchBusError, connectTestBus } from '@jarvis/bus/testing';
import { toolsInvoke } from '@jarvis/contracts';
import { createOutboundGuard, OutboundAllowedHosts } from '@jarvis/net-guard';
import {
  loopbackNamesInHosts,
  startTestSite,
  stopTestSite,
  type TestSite,
  uniqueNamespace,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerHandlers } from '../handlers';
import { ToolRegistry } from '../registry';
import { createWebFetchTool } from './web-fetch';

// The SSRF set of issue 27, for web_fetch: hostile URLs, each aimed at a loopback listener this
// test runs and that counts every connection made to it. Asked through the tools service's real
// tools.invoke RPC over NATS, with real sockets; none may reach the listener, and each must come
// back as a forbidden tool error in the guard's words.

const USER_ID = randomUUID();
// The tool's words for a refusal: "refused to connect: <host> is [<address>,] <why>; ...".
const PRIVATE =
  /^refused to connect: \S+ is (\S+, )?a private or local address that OUTBOUND_ALLOWED_HOSTS does not name; /;
const METADATA =
  /^refused to connect: \S+ is (\S+, )?a cloud metadata address, which is never reachable; /;

let target: TestSite;
// The same counting target on ::1, where the machine has IPv6 loopback.
let target6: TestSite | undefined;
// The "public-looking" host: named in OUTBOUND_ALLOWED_HOSTS by its host:port entry, it answers
// every request with a 302 to the URL in its ?to= parameter.
let redirector: TestSite;
let server: Bus;
let client: Bus;

beforeAll(async () => {
  const answer: RequestListener = (_request, response) => {
    response.writeHead(200, { 'content-type': 'text/plain' });
    response.end('the loopback secret');
  };
  target = await startTestSite(answer);
  target6 = await startTestSite(answer, '::1', target.port).catch(() => undefined);
  redirector = await startTestSite((request, response) => {
    const to = new URL(request.url ?? '/', 'http://redirector').searchParams.get('to') ?? '/';
    response.writeHead(302, { location: to });
    response.end();
  });

  // As main.ts builds it, with the redirector's exact host:port as the one allowed entry.
  const guard = createOutboundGuard(OutboundAllowedHosts.parse(`127.0.0.1:${redirector.port}`));
  const registry = new ToolRegistry();
  registry.register(createWebFetchTool({ guard, maxBytes: 100_000, timeoutMs: 1_000 }));
  const namespace = uniqueNamespace('tools-ssrf');
  server = await connectTestBus(namespace);
  client = await connectTestBus(namespace);
  registerHandlers(server, registry);
  await server.nc.flush();
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  await stopTestSite(target);
  await stopTestSite(target6);
  await stopTestSite(redirector);
});

type Case = { url: string; expected: RegExp };

function hostileUrls(): Case[] {
  const port = target.port;
  const at = (host: string, expected = PRIVATE) => ({
    url: `http://${host}:${port}/secret`,
    expected,
  });
  const direct: Case[] = [
    at('127.0.0.1'),
    at('127.1'),
    at('127.0.1'),
    at('127.255.255.254'),
    at('2130706433'),
    at('0x7f000001'),
    at('0x7f.0x0.0x0.0x1'),
    at('0177.0.0.1'),
    at('017700000001'),
    at('0177.1'),
    at('127.0.0.1.'),
    at('0.0.0.0'),
    at('0'),
    at('[::1]'),
    at('[0:0:0:0:0:0:0:1]'),
    at('[::]'),
    at('[::ffff:127.0.0.1]'),
    at('[::ffff:7f00:1]'),
    at('[0:0:0:0:0:ffff:127.0.0.1]'),
    at('[::ffff:0:127.0.0.1]'),
    at('[::127.0.0.1]'),
    at('[64:ff9b::127.0.0.1]'),
    at('[64:ff9b:1::7f00:1]'),
    at('[2002:7f00:1::]'),
    at('[2001:0:4136:e378:8000:63bf:80ff:fffe]'),
    at('[fe80::1]'),
    at('[fc00::1]'),
    at('169.254.1.1'),
    at('100.64.0.1'),
    at('198.18.0.1'),
    at('198.19.255.254'),
    at('192.0.0.8'),
    at('10.0.0.1'),
    at('172.16.0.1'),
    at('192.168.0.1'),
    at('169.254.169.254', METADATA),
    at('0xa9fea9fe', METADATA),
    at('[::ffff:169.254.169.254]', METADATA),
    at('[fd00:ec2::254]', METADATA),
    at('metadata.google.internal', METADATA),
    at('user:pass@127.0.0.1'),
    at('localhost'),
    at('LocalHost'),
    // Percent-encoded and full-width digits: the URL parser decodes both to 127.0.0.1.
    at('%31%32%37.0.0.1'),
    at('\uff11\uff12\uff17.\uff10.\uff10.\uff11'),
  ];
  const https = { url: `https://127.0.0.1:${port}/secret`, expected: PRIVATE };
  const names = loopbackNamesInHosts()
    .filter((name) => name !== 'localhost')
    .map((name) => at(name));
  // Through the allowed redirector: its 302 must be checked again on its own address and port.
  const via = (to: string) => ({
    url: `http://127.0.0.1:${redirector.port}/?to=${encodeURIComponent(to)}`,
    expected: PRIVATE,
  });
  const redirected = [
    via(`http://127.0.0.1:${port}/secret`),
    via(`http://localhost:${port}/secret`),
    via(`http://0x7f000001:${port}/secret`),
    via(`http://[::ffff:127.0.0.1]:${port}/secret`),
    via(`http://[::1]:${port}/secret`),
    via(`http://[::]:${port}/secret`),
    // Scheme-relative: same host as the allowed one, another port.
    via(`//127.0.0.1:${port}/secret`),
  ];
  return [...direct, https, ...names, ...redirected];
}

describe('web_fetch SSRF set (issue 27)', () => {
  it('reaches no loopback listener by any hostile URL, and says each was refused', async () => {
    const cases = hostileUrls();
    expect(cases.length).toBeGreaterThanOrEqual(30);
    const rows: { url: string; outcome: string }[] = [];
    const failures: string[] = [];

    for (const { url, expected } of cases) {
      const reply = client.request(toolsInvoke, {
        userId: USER_ID,
        name: 'web_fetch',
        arguments: { url },
        timeoutMs: 2_000,
      });
      const outcome = await reply.then(
        (result) => ({ ok: true as const, text: JSON.stringify(result).slice(0, 120) }),
        () => undefined,
      );
      if (outcome) {
        rows.push({ url, outcome: `FETCHED ${outcome.text}` });
        failures.push(`${url} was fetched`);
        continue;
      }
      const error = await catchBusError(reply);
      rows.push({ url, outcome: `${error.code}: ${error.message}` });
      if (error.code !== 'forbidden' || !expected.test(error.message)) {
        failures.push(`${url} answered ${error.code}: ${error.message}`);
      }
    }

    console.log(
      `loopback listeners: 127.0.0.1:${target.port}${target6 ? ` and [::1]:${target6.port}` : ' (no ::1 on this machine)'}; names /etc/hosts maps to loopback: ${loopbackNamesInHosts().join(', ')}`,
    );
    const width = Math.max(...rows.map((row) => row.url.length));
    console.log(
      [
        `| ${'URL'.padEnd(width)} | outcome`,
        `|${'-'.repeat(width + 2)}|--------`,
        ...rows.map((row) => `| ${row.url.padEnd(width)} | ${row.outcome}`),
      ].join('\n'),
    );

    expect(failures).toEqual([]);
    expect(target.connections + (target6?.connections ?? 0)).toBe(0);
    // The allowed redirector was reached for each redirect case: the redirects were real.
    expect(redirector.connections).toBeGreaterThanOrEqual(7);
    // And the count can move: a plain request to each loopback listener is counted.
    await fetch(`http://127.0.0.1:${target.port}/`).then((response) => response.text());
    expect(target.connections).toBe(1);
    if (target6) {
      await fetch(`http://[::1]:${target6.port}/`).then((response) => response.text());
      expect(target6.connections).toBe(1);
    }
    // Were the guard broken, some fetches would wait out their 1 s limit; the table still prints.
  }, 20_000);
});
