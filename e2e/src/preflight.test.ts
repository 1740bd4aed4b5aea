import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// `make test` runs scripts/preflight.sh first: on a machine without a dependency it must stop
// with the command that gets it, not start a suite that fails on it test by test.
const SCRIPT = fileURLToPath(new URL('../../scripts/preflight.sh', import.meta.url));

function preflight(env: Record<string, string>) {
  const run = spawnSync('bash', [SCRIPT], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

describe('preflight', () => {
  it('passes where NATS with JetStream, Redis and the rest answer', () => {
    const { status, output } = preflight({});
    expect(output).toMatch(/ok +NATS with JetStream on 127\.0\.0\.1:4222/);
    expect(status).toBe(0);
  });

  it('names what is missing and how to get it, and fails', () => {
    // Nothing listens on port 1: a closed port stands for a server not installed or not started.
    const { status, output } = preflight({
      NATS_URL: 'nats://127.0.0.1:1',
      REDIS_URL: 'redis://127.0.0.1:1',
      DATABASE_URL: 'postgres://postgres@127.0.0.1:1/postgres',
    });
    expect(status).toBe(1);
    expect(output).toMatch(/MISSING +NATS with JetStream on 127\.0\.0\.1:1/);
    expect(output).toContain('apt-get install -y nats-server');
    expect(output).toMatch(/MISSING +Redis on 127\.0\.0\.1:1/);
    expect(output).toContain('apt-get install -y redis-server');
    expect(output).toMatch(/MISSING +PostgreSQL on 127\.0\.0\.1:1 \(DATABASE_URL\)/);
    expect(output).toContain('infra/ci/postgres17.sh start');
    expect(output).toContain('3 missing');
  });
});
