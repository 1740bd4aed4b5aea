import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadEnv } from './env';

afterEach(() => {
  vi.restoreAllMocks();
});

function refusal(source: Record<string, string>): { code: unknown; output: string } {
  let output = '';
  vi.spyOn(process.stderr, 'write').mockImplementation((text) => {
    output += String(text);
    return true;
  });
  vi.spyOn(process, 'exit').mockImplementation((code) => {
    throw new Error(`exit ${code}`);
  });
  try {
    loadEnv(source);
  } catch (error) {
    return { code: error instanceof Error ? error.message : error, output };
  }
  throw new Error('loadEnv accepted the settings');
}

describe('tools settings: web search', () => {
  it('configures no provider by default, with the APIs at their public addresses', () => {
    const env = loadEnv({});

    expect(env.WEB_SEARCH_PROVIDER).toBeUndefined();
    expect(env.SEARXNG_URL).toBeUndefined();
    expect(env).toMatchObject({
      BRAVE_SEARCH_URL: 'https://api.search.brave.com/res/v1/web/search',
      TAVILY_URL: 'https://api.tavily.com/search',
      WEB_SEARCH_MAX_RESULTS: 8,
    });
  });

  it("takes compose's empty values as unset", () => {
    const env = loadEnv({ WEB_SEARCH_PROVIDER: '', SEARXNG_URL: '', WEB_SEARCH_MAX_RESULTS: '' });

    expect(env.WEB_SEARCH_PROVIDER).toBeUndefined();
    expect(env.SEARXNG_URL).toBeUndefined();
  });

  it.each([
    ['searxng', 'SEARXNG_URL'],
    ['brave', 'BRAVE_SEARCH_API_KEY'],
    ['tavily', 'TAVILY_API_KEY'],
  ])('refuses WEB_SEARCH_PROVIDER=%s without %s at boot, naming it', (provider, setting) => {
    const { code, output } = refusal({ WEB_SEARCH_PROVIDER: provider });

    expect(code).toBe('exit 78');
    expect(output).toContain(`WEB_SEARCH_PROVIDER: ${provider} needs ${setting}`);
  });

  it.each([
    ['WEB_SEARCH_PROVIDER', 'google'],
    ['SEARXNG_URL', 'searxng:8080'],
    ['SEARXNG_URL', 'file:///etc/passwd'],
    ['WEB_SEARCH_MAX_RESULTS', '0'],
    ['WEB_SEARCH_MAX_RESULTS', '21'],
  ])('refuses %s=%s at boot', (name, value) => {
    expect(refusal({ [name]: value }).code).toBe('exit 78');
  });

  it('accepts a named provider with its setting', () => {
    const env = loadEnv({ WEB_SEARCH_PROVIDER: 'searxng', SEARXNG_URL: 'http://searxng:8080' });

    expect(env).toMatchObject({
      WEB_SEARCH_PROVIDER: 'searxng',
      SEARXNG_URL: 'http://searxng:8080',
    });
  });
});

describe('tools settings: sandbox', () => {
  it("has the issue's limits by default, run as nobody from a directory under the system's temp", () => {
    const env = loadEnv({});

    expect(env).toMatchObject({
      SANDBOX_ENABLED: true,
      SANDBOX_BWRAP: 'bwrap',
      SANDBOX_USER: 'nobody',
      SANDBOX_CPU_SECONDS: 30,
      SANDBOX_WALL_MS: 60_000,
      SANDBOX_MEMORY_MB: 512,
      SANDBOX_PROCESSES: 64,
      SANDBOX_OUTPUT_BYTES: 1_048_576,
      SANDBOX_DISK_MB: 256,
      SANDBOX_MAX_CONCURRENT: 4,
    });
    expect(env.SANDBOX_DIR).toMatch(/jarvis-sandbox$/);
  });

  it('turns the sandbox off with SANDBOX_ENABLED=false', () => {
    expect(loadEnv({ SANDBOX_ENABLED: 'false' }).SANDBOX_ENABLED).toBe(false);
  });

  it.each([
    ['SANDBOX_ENABLED', 'maybe'],
    ['SANDBOX_PROCESSES', '4'],
    ['SANDBOX_MEMORY_MB', '16'],
    ['SANDBOX_MAX_CONCURRENT', '0'],
  ])('refuses %s=%s at boot', (name, value) => {
    expect(refusal({ [name]: value }).code).toBe('exit 78');
  });
});
