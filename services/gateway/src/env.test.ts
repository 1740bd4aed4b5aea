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
      CORS_ORIGINS: [],
    });
  });

  it('reads CORS_ORIGINS as a comma-separated list', () => {
    const env = loadEnv({ CORS_ORIGINS: ' https://app.example.com, http://localhost:5173 ,' });

    expect(env.CORS_ORIGINS).toEqual(['https://app.example.com', 'http://localhost:5173']);
  });

  it.each([
    ['CORS_ORIGINS', 'https://app.example.com/'],
    ['CORS_ORIGINS', 'https://app.example.com/chat'],
    ['CORS_ORIGINS', 'app.example.com'],
    ['CORS_ORIGINS', '*'],
    ['RATE_LIMIT_PER_MINUTE', '-1'],
    ['CHAT_RATE_LIMIT_PER_MINUTE', 'many'],
  ])('refuses %s=%s at boot', (name, value) => {
    vi.spyOn(process.stderr, 'write').mockReturnValue(true);
    vi.spyOn(process, 'exit').mockImplementation((code) => {
      throw new Error(`exit ${code}`);
    });

    expect(() => loadEnv({ [name]: value })).toThrow('exit 78');
  });
});
