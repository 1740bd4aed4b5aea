import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

export type Address = ipaddr.IPv4 | ipaddr.IPv6;

type Range<A extends Address> = [A, number];

function v4(cidr: string): Range<ipaddr.IPv4> {
  return ipaddr.IPv4.parseCIDR(cidr);
}

function v6(cidr: string): Range<ipaddr.IPv6> {
  return ipaddr.IPv6.parseCIDR(cidr);
}

// IPv4 that is not the public internet: the IANA IPv4 Special-Purpose Address Registry's blocks
// that are not globally reachable (or only as anycast services no page lives on), plus multicast
// and the reserved 240/4.
const NON_PUBLIC_V4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.31.196.0/24',
  '192.52.193.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '192.175.48.0/24',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/3',
].map(v4);

// Only 2000::/3 is allocated as global unicast: everything outside it (loopback, unspecified,
// IPv4-compatible and IPv4-translated forms, 64:ff9b:1::/48, 100::/64, 5f00::/16, unique local,
// link-local, multicast, ...) is refused whole, so a block the registry adds later is too.
// Inside it, the registry's blocks that are not globally reachable.
const GLOBAL_UNICAST_V6 = v6('2000::/3');
const NON_PUBLIC_V6 = [
  // IETF protocol assignments: Teredo, benchmarking, ORCHID, and more.
  '2001::/23',
  '2001:db8::/32',
  // Documentation (RFC 9637).
  '3fff::/20',
].map(v6);

// Cloud instance metadata, where credentials live: never reachable, whatever an operator
// allows. AWS, GCP, Azure, Oracle and most others; AWS ECS task credentials; Azure's WireServer;
// Alibaba; Oracle Cloud Classic; Tencent; AWS and GCP over IPv6.
const METADATA_V4 = [
  '169.254.169.254/32',
  '169.254.170.2/32',
  '168.63.129.16/32',
  '100.100.100.200/32',
  '192.0.0.192/32',
  '169.254.0.23/32',
].map(v4);
const METADATA_V6 = ['fd00:ec2::254/128', 'fd20:ce::254/128'].map(v6);

// Names of metadata services, refused before any lookup.
const METADATA_HOSTS = new Set([
  'metadata',
  'metadata.google.internal',
  'metadata.goog',
  'instance-data',
  'instance-data.ec2.internal',
  'metadata.tencentyun.com',
]);

// IPv6 prefixes that carry an IPv4 address, and where: connecting to one reaches that IPv4
// address (through the host's stack, a NAT64 gateway or a 6to4 relay), so it is judged as it.
const EMBEDDING_V4 = [
  // IPv4-mapped, ::ffff:a.b.c.d.
  { range: v6('::ffff:0:0/96'), at: 6 },
  // IPv4-translated (RFC 2765, SIIT), ::ffff:0:a.b.c.d.
  { range: v6('::ffff:0:0:0/96'), at: 6 },
  // NAT64's well-known prefix (RFC 6052).
  { range: v6('64:ff9b::/96'), at: 6 },
  // 6to4 (RFC 3056): 2002:AABB:CCDD::/48 is a.b.c.d's network.
  { range: v6('2002::/16'), at: 1 },
];

// The address a connection to this one reaches: the IPv4 address an IPv6 form embeds, or itself.
// Undefined for what is not an IP address (a name, an address with a port).
export function parseAddress(text: string): Address | undefined {
  // net.isIP accepts only canonical spellings (no octal, hex or integer IPv4), as DNS answers and
  // WHATWG URL hosts are; a zone (fe80::1%eth0) is dropped, it does not change the address.
  const bare = text.replace(/%.*$/, '');
  if (isIP(bare) === 0) return undefined;
  const address = ipaddr.parse(bare);
  if (!(address instanceof ipaddr.IPv6)) return address;
  const embedding = EMBEDDING_V4.find(({ range }) => address.match(range));
  if (!embedding) return address;
  const [high = 0, low = 0] = address.parts.slice(embedding.at, embedding.at + 2);
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

// ipaddr.js throws when an address is matched against a range of the other family.
function isInRanges(
  address: Address,
  v4Ranges: Range<ipaddr.IPv4>[],
  v6Ranges: Range<ipaddr.IPv6>[],
): boolean {
  const ranges: Range<Address>[] = address instanceof ipaddr.IPv6 ? v6Ranges : v4Ranges;
  return ranges.some((range) => address.match(range));
}

export function isMetadataHost(host: string): boolean {
  return METADATA_HOSTS.has(host.toLowerCase().replace(/\.$/, ''));
}

// Whether this address, in any spelling that reaches it, is a cloud metadata service.
export function isMetadataAddress(text: string): boolean {
  const address = parseAddress(text);
  return address !== undefined && isInRanges(address, METADATA_V4, METADATA_V6);
}

// Whether connecting to this address reaches the public internet and nothing else.
export function isPublicAddress(text: string): boolean {
  const address = parseAddress(text);
  if (!address || isInRanges(address, METADATA_V4, METADATA_V6)) return false;
  if (address instanceof ipaddr.IPv6 && !address.match(GLOBAL_UNICAST_V6)) return false;
  return !isInRanges(address, NON_PUBLIC_V4, NON_PUBLIC_V6);
}
