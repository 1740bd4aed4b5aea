import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundAllowedHosts } from './allowed-hosts';
import { createOutboundGuard, OutboundRefusedError } from './outbound-guard';

// Requests through the guard to a server on loopback: refused ones fail before connecting, so
// the addresses they name need no server.
let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((_request, response) => response.end('reached'));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

function guardAllowing(setting: string) {
  return createOutboundGuard(OutboundAllowedHosts.parse(setting));
}

// 'reached', or the refusal's message.
async function get(setting: string, url: string): Promise<string> {
  const target = new URL(url);
  try {
    const options = guardAllowing(setting).connectOptions(target);
    return await new Promise<string>((resolve, reject) => {
      const sent = request(target, { agent: false, ...options }, (response) => {
        response.setEncoding('utf8');
        let body = '';
        response.on('data', (chunk: string) => {
          body += chunk;
        });
        response.on('end', () => resolve(body));
      });
      sent.on('error', reject);
      sent.end();
    });
  } catch (error) {
    if (error instanceof OutboundRefusedError) return error.message;
    throw error;
  }
}

describe('the outbound guard', () => {
  it('refuses private and local destinations nobody allowed, by address or by name', async () => {
    expect(await get('', `http://127.0.0.1:${port}/`)).toBe(
      '127.0.0.1 is a private or local address that OUTBOUND_ALLOWED_HOSTS does not name',
    );
    expect(await get('', `http://localhost:${port}/`)).toMatch(
      /^localhost is (127\.0\.0\.1|::1), a private or local address that OUTBOUND_ALLOWED_HOSTS/,
    );
    expect(await get('', `http://[::ffff:0:7f00:1]:${port}/`)).toMatch(/a private or local/);
  });

  it('allows a host name, at any port, and not the address it resolves to', async () => {
    expect(await get('localhost', `http://localhost:${port}/`)).toBe('reached');
    expect(await get('localhost', `http://127.0.0.1:${port}/`)).toMatch(/does not name$/);
  });

  it('allows host:port at that port only', async () => {
    expect(await get(`localhost:${port}`, `http://localhost:${port}/`)).toBe('reached');
    expect(await get(`localhost:${port}`, `http://localhost:${port + 1}/`)).toMatch(
      /does not name$/,
    );
    expect(await get(`127.0.0.1:${port}`, `http://127.0.0.1:${port}/`)).toBe('reached');
  });

  it('allows an address, and a CIDR, exactly', async () => {
    expect(await get('127.0.0.1', `http://127.0.0.1:${port}/`)).toBe('reached');
    expect(await get('127.0.0.1', `http://127.0.0.2:${port}/`)).toMatch(/does not name$/);
    expect(await get('127.0.0.0/31', `http://127.0.0.1:${port}/`)).toBe('reached');
    expect(await get('127.0.0.0/31', `http://127.0.0.2:${port}/`)).toMatch(/does not name$/);
  });

  it('refuses cloud metadata even when allowed, in any spelling', async () => {
    const allowAll =
      '169.254.0.0/16,metadata.google.internal,169.254.169.254,fd00::/8,evil.example';
    for (const url of [
      'http://169.254.169.254/latest/meta-data/',
      'http://[::ffff:169.254.169.254]/',
      'http://[::ffff:0:a9fe:a9fe]/',
      'http://[fd00:ec2::254]/',
      'http://metadata.google.internal/computeMetadata/v1/',
    ]) {
      expect(await get(allowAll, url)).toMatch(
        /a cloud metadata address, which is never reachable$/,
      );
    }
    // A name that resolves to it, checked at connect time.
    const guard = guardAllowing(allowAll);
    expect(guard.refusalOf({ host: 'evil.example', port: 80, address: '169.254.169.254' })).toBe(
      'metadata',
    );
    expect(guard.refusalOf({ host: 'evil.example', port: 80, address: '10.0.0.1' })).toBe(
      undefined,
    );
  });
});
