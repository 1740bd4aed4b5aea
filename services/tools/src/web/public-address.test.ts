import { describe, expect, it } from 'vitest';
import { isMetadataAddress, isPublicAddress } from './public-address';

describe('isPublicAddress', () => {
  it.each([
    '8.8.8.8',
    '93.184.215.14',
    '2606:4700:4700::1111',
    // IPv4-mapped and NAT64 forms of a public address.
    '::ffff:8.8.8.8',
    '64:ff9b::808:808',
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
    ['AWS IPv6 metadata', 'fd00:ec2::254'],
    ['unique local', 'fd12:3456::1'],
    ['IPv6 link-local', 'fe80::1'],
    ['multicast', '239.1.1.1'],
    ['broadcast', '255.255.255.255'],
    ['IPv4-mapped loopback', '::ffff:127.0.0.1'],
    ['IPv4-mapped loopback, hex', '::ffff:7f00:1'],
    ['NAT64 of a private address', '64:ff9b::a00:1'],
    ['6to4', '2002:7f00:1::1'],
    ['documentation', '2001:db8::1'],
    ['not an address', 'example.com'],
  ])('refuses %s (%s)', (_what, address) => {
    expect(isPublicAddress(address)).toBe(false);
  });
});

describe('isMetadataAddress', () => {
  it('knows the metadata endpoints and nothing else', () => {
    expect(['169.254.169.254', 'fd00:ec2::254', '100.100.100.200'].map(isMetadataAddress)).toEqual([
      true,
      true,
      true,
    ]);
    expect(['10.0.0.1', '127.0.0.1', '8.8.8.8', '::1'].map(isMetadataAddress)).toEqual([
      false,
      false,
      false,
      false,
    ]);
  });
});
