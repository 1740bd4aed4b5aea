import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadEnv } from './env';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('gateway settings', () => {
  it('limits every key by default, and allows no other origin', () => {
    expect(loadEnv({})).toMatchObject({
      RATE_LIMIT_PER_MINUTE: 600,
      CHAT_RATE_LIMIT_PER_MINUTE: 60,
      RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE: 60,
      TRUST_PROXY: ['uniquelocal'],
      CORS_ORIGINS: [],
    });
  });

  it.each([
    ['false', false],
    ['2', 2],
    [' loopback, 10.0.0.0/8 ,172.18.0.2', ['loopback', '10.0.0.0/8', '172.18.0.2']],
  ])('reads TRUST_PROXY=%j as %j', (value, expected) => {
    expect(loadEnv({ TRUST_PROXY: value }).TRUST_PROXY).toEqual(expected);
  });

  it('reads CORS_ORIGINS as a comma-separated list', () => {
    const env = loadEnv({ CORS_ORIGINS: ' https://app.example.com, http://localhost:5173 ,' });

    expect(env.CORS_ORIGINS).toEqual(['https://app.example.com', 'http://localhost:5173']);
  });

  it('reads GRAFANA_URL without its trailing slash, and leaves it unset when empty', () => {
    expect(loadEnv({ GRAFANA_URL: 'https://jarvis.example.com/grafana/' }).GRAFANA_URL).toBe(
      'https://jarvis.example.com/grafana',
    );
    expect(loadEnv({ GRAFANA_URL: '' }).GRAFANA_URL).toBeUndefined();
  });

  it.each([
    ['CORS_ORIGINS', 'https://app.example.com/'],
    ['CORS_ORIGINS', 'https://app.example.com/chat'],
    ['CORS_ORIGINS', 'app.example.com'],
    ['CORS_ORIGINS', '*'],
    ['RATE_LIMIT_PER_MINUTE', '-1'],
    ['CHAT_RATE_LIMIT_PER_MINUTE', 'many'],
    ['RATE_LIMIT_UNAUTHENTICATED_PER_MINUTE', '-5'],
    ['TRUST_PROXY', 'traefik'],
    ['TRUST_PROXY', '0'],
    ['GRAFANA_URL', 'grafana.example.com'],
    ['GRAFANA_URL', 'javascript:alert(1)'],
    ['GRAFANA_URL', 'https://jarvis.example.com/grafana?orgId=1'],
  ])('refuses %s=%s at boot', (name, value) => {
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    vi.spyOn(process, 'exit').mockImplementation((code) => {
      throw new Error(`exit ${code}`);
    });

    expect(() => loadEnv({ [name]: value })).toThrow('exit 78');
  });
});
