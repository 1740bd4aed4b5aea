import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { OutboundAllowedHosts } from './allowed-hosts';

function parse(text: string | undefined) {
  const result = OutboundAllowedHosts.safeParse(text);
  return result.success ? result.data : z.prettifyError(result.error);
}

describe('OUTBOUND_ALLOWED_HOSTS', () => {
  it('reads names, name:port, addresses, [v6]:port and CIDRs', () => {
    const hosts = parse(
      ' ntfy.home ,NAS.local.:8443,192.168.1.5, 10.0.0.7:80,fd00::1,[fd00::2]:443,10.1.0.0/16,fd12::/64',
    );

    expect(hosts).toEqual([
      { kind: 'name', name: 'ntfy.home', port: undefined },
      { kind: 'name', name: 'nas.local', port: 8443 },
      { kind: 'range', range: [expect.anything(), 32], port: undefined },
      { kind: 'range', range: [expect.anything(), 32], port: 80 },
      { kind: 'range', range: [expect.anything(), 128], port: undefined },
      { kind: 'range', range: [expect.anything(), 128], port: 443 },
      { kind: 'range', range: [expect.anything(), 16], port: undefined },
      { kind: 'range', range: [expect.anything(), 64], port: undefined },
    ]);
  });

  it('is empty when unset or blank', () => {
    expect(parse(undefined)).toEqual([]);
    expect(parse(' , ')).toEqual([]);
  });

  it.each([
    'http://ntfy.home',
    'ntfy.home:0',
    'ntfy.home:70000',
    '10.0.0.0/33',
    '10.0.0.0/8:80',
    'fd00::1:80:',
    '[ntfy.home]:80',
    'bad host',
    '*.home',
  ])('refuses %s, naming it', (entry) => {
    expect(parse(`ntfy.home,${entry}`)).toBe(
      `✖ ${entry} is not a host name, host:port, IP address or CIDR`,
    );
  });
});
