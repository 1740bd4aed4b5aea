import { describe, expect, it } from 'vitest';
import { isMetadataAddress, isMetadataHost, isPublicAddress } from './address-ranges';

describe('isPublicAddress', () => {
  it.each([
    '8.8.8.8',
    '93.184.215.14',
    '2606:4700:4700::1111',
    // IPv4-mapped, IPv4-translated, NAT64 and 6to4 forms of a public address.
    '::ffff:8.8.8.8',
    '::ffff:0:808:808',
    '64:ff9b::808:808',
    '2002:808:808::1',
  ])('lets %s through', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it.each([
    ['loopback', '127.0.0.1'],
    ['loopback, anywhere in 127/8', '127.1.2.3'],
    ['IPv6 loopback', '::1'],
    ['unspecified', '0.0.0.0'],
    ['IPv6 unspecified', '::'],
    ['private 10/8', '10.1.2.3'],
    ['private 172.16/12', '172.31.255.1'],
    ['private 192.168/16', '192.168.1.1'],
    ['shared address space', '100.64.0.1'],
    ['link-local', '169.254.1.1'],
    ['metadata', '169.254.169.254'],
    ['Alibaba metadata', '100.100.100.200'],
    ['Azure WireServer', '168.63.129.16'],
    ['AWS IPv6 metadata', 'fd00:ec2::254'],
    ['unique local', 'fd12:3456::1'],
    ['IPv6 link-local', 'fe80::1'],
    ['IPv6 link-local with a zone', 'fe80::1%eth0'],
    ['multicast', '239.1.1.1'],
    ['IPv6 multicast', 'ff02::1'],
    ['broadcast', '255.255.255.255'],
    ['reserved 240/4', '240.0.0.1'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-mapped loopback, hex', '::ffff:7f00:1'],
    ['IPv4-mapped metadata', '::ffff:a9fe:a9fe'],
    ['IPv4-translated loopback', '::ffff:0:7f00:1'],
    ['IPv4-translated private', '::ffff:0:a00:1'],
    ['IPv4-compatible loopback', '::7f00:1'],
    ['NAT64 of a private address', '64:ff9b::a00:1'],
    ['NAT64 of loopback, dotted', '64:ff9b::127.0.0.1'],
    ['local-use NAT64', '64:ff9b:1::808:808'],
    ['6to4 of loopback', '2002:7f00:1::1'],
    ['6to4 of a private address', '2002:c0a8:101::1'],
    ['Teredo', '2001:0:4136:e378:8000:63bf:3fff:fdd2'],
    ['documentation', '2001:db8::1'],
    ['documentation 3fff::/20', '3fff::1'],
    ['documentation 3fff::/20, its last block', '3fff:fff:ffff::1'],
    ['discard-only', '100::1'],
    ['SRv6 SIDs', '5f00::1'],
    ['benchmarking', '198.18.0.1'],
    ['not an address', 'example.com'],
    ['an IPv4 integer spelling', '2130706433'],
  ])('refuses %s (%s)', (_what, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});

describe('isMetadataAddress', () => {
  it('knows the metadata endpoints, in every spelling that reaches them, and nothing else', () => {
    const metadata = [
      '169.254.169.254',
      '::ffff:169.254.169.254',
      '::ffff:0:a9fe:a9fe',
      '64:ff9b::a9fe:a9fe',
      'fd00:ec2::254',
      '100.100.100.200',
      '169.254.170.2',
    ];
    expect(metadata.filter(isMetadataAddress)).toEqual(metadata);
    expect(
      ['10.0.0.1', '127.0.0.1', '8.8.8.8', '::1', 'fd00:ec2::253'].filter(isMetadataAddress),
    ).toEqual([]);
  });

  it('knows the metadata host names, however written', () => {
    expect(
      ['metadata.google.internal', 'METADATA.GOOGLE.INTERNAL.', 'metadata'].every(isMetadataHost),
    ).toBe(true);
    expect(isMetadataHost('metadata.example.com')).toBe(false);
  });
});
