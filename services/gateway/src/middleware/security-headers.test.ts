import { createService, type Service } from '@jarvis/service-kit';
import { createLogger, createMetrics } from '@jarvis/telemetry';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { securityHeaders } from './security-headers';

let service: Service;
let url: string;

beforeAll(async () => {
  service = createService({
    name: 'security-headers-test',
    port: 0,
    host: '127.0.0.1',
    logger: createLogger('security-headers-test', 'silent'),
    metrics: createMetrics('security-headers-test'),
    checks: {},
    dependencyLossExitMs: 60_000,
    onStop: async () => {},
    exit: () => {},
  });
  service.app.use(securityHeaders());
  service.app.get('/', (_req, res) => {
    res.type('html').send('<!doctype html><title>Jarvis</title>');
  });
  const { port } = await service.start();
  url = `http://127.0.0.1:${port}/`;
});

afterAll(async () => {
  await service?.stop();
});

describe('security headers', () => {
  it('allow styles, fonts and images from this origin only (and its own blob: images), and no inline style', async () => {
    const response = await fetch(url);
    const policy = Object.fromEntries(
      (response.headers.get('content-security-policy') ?? '').split(';').map((directive) => {
        const [name = '', ...sources] = directive.trim().split(/\s+/);
        return [name, sources.join(' ')];
      }),
    );

    expect(policy).toMatchObject({
      'default-src': "'self'",
      'script-src': "'self'",
      'script-src-attr': "'none'",
      'style-src': "'self'",
      'font-src': "'self'",
      'img-src': "'self' blob:",
      'object-src': "'none'",
    });
    expect(policy).not.toHaveProperty('upgrade-insecure-requests');
    expect(response.headers.get('x-content-type-options')).toBe('nosniff');
  });
});
