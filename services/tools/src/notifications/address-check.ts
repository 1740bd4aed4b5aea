import type { LookupAddress } from 'node:dns';
import type { OutboundGuard } from '@jarvis/net-guard';

// Resolves a user-given destination's host through the outbound guard's checking lookup and
// answers the first address, which passed with every other one: what a sender connects to, and
// what a PUT checks so that a private address is refused when the channel is saved rather than
// at its first delivery. Throws OutboundRefusedError, or the DNS error.
export async function resolveThroughGuard(guard: OutboundGuard, url: URL): Promise<string> {
  // Throws at once for a refused address written in the URL.
  const { lookup } = guard.connectOptions(url);
  const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
  return new Promise((resolve, reject) => {
    lookup(host, { all: true }, (error, addresses) => {
      if (error) return reject(error);
      const [first] = toList(addresses);
      if (!first) return reject(new Error(`${host} has no address`));
      resolve(first.address);
    });
  });
}

function toList(addresses: string | LookupAddress[]): LookupAddress[] {
  return typeof addresses === 'string' ? [{ address: addresses, family: 0 }] : addresses;
}

// An SMTP server as a URL, for the guard: its host and port are what it judges.
export function smtpUrl(host: string, port: number): URL {
  return new URL(`smtp://${host.includes(':') ? `[${host}]` : host}:${port}`);
}
