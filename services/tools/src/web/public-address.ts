import { BlockList, isIPv4, isIPv6 } from 'node:net';

// Cloud instance metadata (AWS, GCP, Azure; AWS over IPv6; Alibaba): credentials live there, so
// these stay out of reach even when private networks are allowed.
const METADATA = new BlockList();
METADATA.addAddress('169.254.169.254', 'ipv4');
METADATA.addAddress('fd00:ec2::254', 'ipv6');
METADATA.addAddress('100.100.100.200', 'ipv4');

// Everything that is not the public internet: this host, private and shared networks,
// link-local, documentation, multicast and reserved ranges (IANA special-purpose registries).
const NON_PUBLIC = new BlockList();
for (const [network, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 3],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv4');
}
for (const [network, prefix] of [
  // Unspecified, loopback and IPv4-compatible. IPv4-mapped (::ffff:a.b.c.d reaches a.b.c.d) is
  // judged by the IPv4 rules above: BlockList applies them to it.
  ['::', 96],
  ['100::', 64],
  ['2001::', 23],
  ['2001:db8::', 32],
  // 6to4 wraps any IPv4 address, private ones too.
  ['2002::', 16],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
] as const) {
  NON_PUBLIC.addSubnet(network, prefix, 'ipv6');
}

// NAT64 (64:ff9b::/96) forwards to the IPv4 address in its last 32 bits.
const NAT64 = /^64:ff9b::(?:ffff:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/i;

export function isMetadataAddress(address: string): boolean {
  return METADATA.check(address, family(address));
}

// Whether connecting to this address reaches the public internet and nothing else.
export function isPublicAddress(address: string): boolean {
  if (!isIPv4(address) && !isIPv6(address)) return false;
  const nat64 = NAT64.exec(address);
  if (nat64) return isPublicAddress(ipv4FromHex(nat64[1] ?? '0', nat64[2] ?? '0'));
  if (address.toLowerCase().startsWith('64:ff9b:')) return false;
  return !NON_PUBLIC.check(address, family(address)) && !isMetadataAddress(address);
}

function family(address: string): 'ipv4' | 'ipv6' {
  return isIPv4(address) ? 'ipv4' : 'ipv6';
}

function ipv4FromHex(high: string, low: string): string {
  const value = (Number.parseInt(high, 16) << 16) | Number.parseInt(low, 16);
  return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
}
