import ipaddr from 'ipaddr.js';
import { z } from 'zod';
import { type Address, parseAddress } from './address-ranges';

// One entry of OUTBOUND_ALLOWED_HOSTS: a host name (whatever it resolves to), or an address or
// CIDR; either limited to one port or not.
export type AllowedHost =
  | { kind: 'name'; name: string; port: number | undefined }
  | { kind: 'range'; range: [Address, number]; port: number | undefined };

// Letters, digits, hyphens and underscores in dot-separated labels (underscores: internal names
// such as docker service names have them).
const HOST_NAME =
  /^(?=.{1,253}$)[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?(?:\.[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?)*$/;
const WITH_PORT = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/;

export function normalizeHostName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

function parsePort(text: string): number | undefined {
  const port = Number(text);
  return port >= 1 && port <= 65_535 ? port : undefined;
}

// Undefined when the entry is none of the accepted forms.
function parseAllowedHost(entry: string): AllowedHost | undefined {
  if (entry.includes('/')) {
    if (!ipaddr.isValidCIDR(entry)) return undefined;
    return { kind: 'range', range: ipaddr.parseCIDR(entry), port: undefined };
  }
  const withPort = WITH_PORT.exec(entry);
  const host = withPort ? (withPort[1] ?? withPort[2] ?? '') : entry.replace(/^\[(.*)\]$/, '$1');
  const port = withPort ? parsePort(withPort[3] ?? '') : undefined;
  if (withPort && port === undefined) return undefined;
  const address = parseAddress(host);
  if (address) {
    const bits = address instanceof ipaddr.IPv6 ? 128 : 32;
    return { kind: 'range', range: [address, bits], port };
  }
  // An IPv6 address is written in brackets before a port; anything else with a colon is not
  // one of the forms.
  if (withPort?.[1] !== undefined) return undefined;
  const name = normalizeHostName(host);
  return HOST_NAME.test(name) ? { kind: 'name', name, port } : undefined;
}

// OUTBOUND_ALLOWED_HOSTS: comma-separated entries, each a host name, host:port, an IP address
// ([v6]:port with a port) or a CIDR. Unset or empty: no private destination is allowed.
export const OutboundAllowedHosts = z
  .string()
  .default('')
  .transform((text, context) => {
    const hosts: AllowedHost[] = [];
    for (const entry of text.split(',').map((part) => part.trim())) {
      if (!entry) continue;
      const host = parseAllowedHost(entry);
      if (host) {
        hosts.push(host);
        continue;
      }
      context.addIssue({
        code: 'custom',
        message: `${entry} is not a host name, host:port, IP address or CIDR`,
      });
      return z.NEVER;
    }
    return hosts;
  });
