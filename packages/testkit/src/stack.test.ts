import { describe, expect, it } from 'vitest';
import { startProcess } from './process';
import { waitUntilReady } from './stack';

describe('waitUntilReady', () => {
  // The wait's own timeout is a minute; the test's is 15 s: a wait that kept polling a dead
  // process until its timeout fails here.
  it('fails as soon as the process exits, with its exit code and output', async () => {
    const managed = startProcess({
      name: 'doomed',
      command: process.execPath,
      args: ['-e', "console.log('cannot start: no config'); process.exit(3)"],
      cwd: process.cwd(),
      env: { PATH: process.env.PATH },
    });

    await expect(waitUntilReady(managed, 60_000)).rejects.toThrow(
      /doomed exited with 3:\s+cannot start: no config/,
    );
  }, 15_000);
});
