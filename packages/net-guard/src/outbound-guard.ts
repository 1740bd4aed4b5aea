import { lookup as resolveHost } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { isMetadataAddress, isMetadataHost, isPublicAddress, parseAddress } from './address-ranges';
import { type AllowedHost, normalizeHostName } from './allowed-hosts';

export type RefusalReason = 'metadata' | 'private';

// A connection the guard refused; its message names the host, the address and why.
export class OutboundRefusedError extends Error {
  readonly host: string;
  readonly address: string;
  readonly reason: RefusalReason;

  constructor(host: string, address: string, reason: RefusalReason) {
    const what = host === address ? `${host} is` : `${host} is ${address},`;
    super(
      reason === 'metadata'
        ? `${what} a cloud metadata address, which is never reachable`
        : `${what} a private or local address that OUTBOUND_ALLOWED_HOSTS does not name`,
    );
    this.name = 'OutboundRefusedError';
    this.host = host;
    this.address = address;
    this.reason = reason;
  }
}

export type OutboundTarget = { host: string; port: number; address: string };

export type OutboundGuard = {
  // Why connecting to this address, resolved from host, is refused; undefined when it is allowed.
  refusalOf(target: OutboundTarget): RefusalReason | undefined;
  // Options for http.request / https.request (or net.connect) to this URL: a DNS lookup that
  // checks every address it answers, so the address checked is the address connected to and a
  // second answer cannot slip another in. Throws OutboundRefusedError at once for an address
  // written in the URL, which is connected to without a lookup, and for a metadata host name.
  connectOptions(url: URL): { lookup: LookupFunction };
};

const DEFAULT_PORTS: Record<string, number> = {
  'http:': 80,
  'https:': 443,
  'ws:': 80,
  'wss:': 443,
};

function isNamedBy(allowed: AllowedHost, target: OutboundTarget): boolean {
  if (allowed.port !== undefined && allowed.port !== target.port) return false;
  if (allowed.kind === 'name') return allowed.name === normalizeHostName(target.host);
  const address = parseAddress(target.address);
  if (!address) return false;
  const [network] = allowed.range;
  // Matching across families throws in ipaddr.js.
  if (address instanceof ipaddr.IPv6 !== network instanceof ipaddr.IPv6) return false;
  return address.match(allowed.range);
}

// The one check every outbound request goes through: the public internet, plus the private
// destinations an operator names in OUTBOUND_ALLOWED_HOSTS; cloud metadata never.
export function createOutboundGuard(allowedHosts: AllowedHost[]): OutboundGuard {
  const refusalOf = (target: OutboundTarget): RefusalReason | undefined => {
    if (isMetadataHost(target.host) || isMetadataAddress(target.address)) return 'metadata';
    if (isPublicAddress(target.address)) return undefined;
    return allowedHosts.some((allowed) => isNamedBy(allowed, target)) ? undefined : 'private';
  };

  const checkedLookup = (host: string, port: number): LookupFunction => {
    return (hostname, options, callback) => {
      resolveHost(
        hostname,
        { family: options.family, hints: options.hints, all: true },
        (error, addresses) => {
          if (error) return callback(error, '');
          // Every address must pass, not just one: the connection may use any of them.
          for (const { address } of addresses) {
            const reason = refusalOf({ host, port, address });
            if (reason) return callback(new OutboundRefusedError(host, address, reason), '');
          }
          if (options.all) return callback(null, addresses);
          const [first] = addresses;
          if (!first) return callback(new Error(`${hostname} has no address`), '');
          callback(null, first.address, first.family);
        },
      );
    };
  };

  return {
    refusalOf,
    connectOptions(url) {
      const host = url.hostname.replace(/^\[(.*)\]$/, '$1');
      const port = url.port ? Number(url.port) : (DEFAULT_PORTS[url.protocol] ?? 0);
      if (isMetadataHost(host)) throw new OutboundRefusedError(host, host, 'metadata');
      if (parseAddress(host)) {
        const reason = refusalOf({ host, port, address: host });
        if (reason) throw new OutboundRefusedError(host, host, reason);
      }
      return { lookup: checkedLookup(host, port) };
    },
  };
}
