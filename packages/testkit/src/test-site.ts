import { readFileSync } from 'node:fs';
import { createServer, type RequestListener, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

// A local HTTP server for a test to serve pages from, counting the TCP connections made to it:
// the SSRF tests aim hostile URLs at one and require the count to stay 0.
export type TestSite = { server: Server; port: number; url: string; connections: number };

export async function startTestSite(
  onRequest: RequestListener,
  host = '127.0.0.1',
  port = 0,
): Promise<TestSite> {
  const server = createServer(onRequest);
  const site: TestSite = { server, port: 0, url: '', connections: 0 };
  server.on('connection', () => {
    site.connections += 1;
  });
  // Rejects rather than hangs when the host cannot be listened on (no ::1 on the machine).
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  site.port = (server.address() as AddressInfo).port;
  site.url = `http://${host.includes(':') ? `[${host}]` : host}:${site.port}`;
  return site;
}

// Cuts the connections still open too: close() alone waits for those in use to end.
export async function stopTestSite(site: TestSite | undefined): Promise<void> {
  if (!site) return;
  site.server.closeAllConnections();
  await new Promise((resolve) => site.server.close(resolve));
}

// The names this machine's /etc/hosts maps to a loopback address (localhost, and often the
// host's own names), [] where it has none: each resolves to a loopback listener without any DNS
// server of ours, so an SSRF test aims at them too.
export function loopbackNamesInHosts(): string[] {
  let text = '';
  try {
    text = readFileSync('/etc/hosts', 'utf8');
  } catch {
    return [];
  }
  const names = new Set<string>();
  for (const line of text.split('\n')) {
    const [address, ...aliases] = line.replace(/#.*/, '').trim().split(/\s+/);
    if (address && (/^127\./.test(address) || address === '::1')) {
      for (const alias of aliases) names.add(alias);
    }
  }
  return [...names];
}
