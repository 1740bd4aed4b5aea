import { existsSync } from 'node:fs';
import { mkdir, readFile, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './sandbox';
import { hostProcessesWith, runOnce, startTestSandbox, TEST_LIMITS } from './sandbox-test-fixture';

// The sandbox with real bwrap boxes (as `nobody` when the tests run as root): each language,
// the workspace, every limit by name, the queue, cancellation, and that no process outlives
// its run.

let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await startTestSandbox();
});

describe('sandbox: languages', () => {
  it('runs Python with numpy, pandas and matplotlib, and gives stdout, stderr and the exit code', async () => {
    const result = await runOnce(sandbox, {
      language: 'python',
      code: [
        'import sys, numpy, pandas, matplotlib.pyplot as plt',
        'print("sum", int(numpy.arange(10).sum()), len(pandas.DataFrame({"a": [1, 2]})))',
        'plt.plot([1, 2, 3]); plt.savefig("/workspace/chart.png")',
        'print("héllo ✓", file=sys.stderr)',
        'sys.exit(3)',
      ].join('\n'),
    });

    expect(result).toMatchObject({ stdout: 'sum 45 2\n', stderr: 'héllo ✓\n', exitCode: 3 });
    expect(result.limit).toBeUndefined();
    expect(result.firstOutputMs).toBeGreaterThan(0);
  }, 30_000);

  it('runs JavaScript on Node', async () => {
    const result = await runOnce(sandbox, {
      language: 'javascript',
      code: 'console.log(process.version.startsWith("v"), 6 * 7); console.error("to stderr"); process.exit(4);',
    });

    expect(result).toMatchObject({ stdout: 'true 42\n', stderr: 'to stderr\n', exitCode: 4 });
  });

  it('runs JavaScript written as an ES module, with top-level await', async () => {
    const result = await runOnce(sandbox, {
      language: 'javascript',
      code: 'import { readFile } from "node:fs/promises";\nconst passwd = await readFile("/etc/passwd", "utf8");\nconsole.log(passwd.split(":")[0]);',
    });

    expect(result).toMatchObject({ stdout: 'sandbox\n', stderr: '', exitCode: 0 });
  });

  it('runs shell as the sandbox user in /workspace, with the documented environment', async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: 'id -un; pwd; echo "$HOME $TMPDIR $LANG $MPLBACKEND"',
    });

    expect(result).toMatchObject({
      stdout: 'sandbox\n/workspace\n/tmp /tmp C.UTF-8 Agg\n',
      exitCode: 0,
    });
  });

  it('sees the files the caller put in the workspace, and leaves what it writes there', async () => {
    const runDir = await sandbox.open();
    try {
      await mkdir(join(runDir.workspaceDir, 'data'));
      await writeFile(join(runDir.workspaceDir, 'data', 'in.csv'), 'a,b\n1,2\n3,4\n');
      const result = await runDir.run({
        language: 'python',
        code: [
          'import pandas',
          'frame = pandas.read_csv("data/in.csv")',
          'frame["c"] = frame.a + frame.b',
          'frame.to_csv("data/in.csv", index=False)',
          'import matplotlib.pyplot as plt',
          'plt.bar(["x", "y"], frame.c); plt.savefig("chart.png")',
          'print("written")',
        ].join('\n'),
      });

      expect(result).toMatchObject({ stdout: 'written\n', exitCode: 0 });
      expect(await readFile(join(runDir.workspaceDir, 'data', 'in.csv'), 'utf8')).toBe(
        'a,b,c\n1,2,3\n3,4,7\n',
      );
      const png = await readFile(join(runDir.workspaceDir, 'chart.png'));
      expect(png.subarray(1, 4).toString()).toBe('PNG');
    } finally {
      await runDir.dispose();
    }
    await expect(stat(runDir.workspaceDir)).rejects.toThrow(/ENOENT/);
  }, 30_000);
});

describe('sandbox: limits, each by name', () => {
  it('stops an infinite loop at its CPU time: cpu', async () => {
    const result = await runOnce(sandbox, { language: 'python', code: 'while True: pass' });

    expect(result).toMatchObject({ limit: 'cpu', signal: 'SIGXCPU', exitCode: 152 });
  }, 20_000);

  it('stops a run that sleeps past its wall time: wall', async () => {
    const result = await runOnce(sandbox, { language: 'shell', code: 'echo started; sleep 600' });

    expect(result).toMatchObject({ limit: 'wall', stdout: 'started\n', exitCode: 137 });
    expect(result.durationMs).toBeGreaterThanOrEqual(TEST_LIMITS.wallMs);
    expect(result.durationMs).toBeLessThan(TEST_LIMITS.wallMs + 3_000);
  }, 20_000);

  it.each([
    ['python', 'blocks = []\nwhile True: blocks.append(bytearray(10_000_000))', /MemoryError/],
    [
      'javascript',
      'const a = []; while (true) a.push(new Array(1e6).fill(1));',
      /heap out of memory/,
    ],
  ] as const)(
    'stops a %s memory bomb: memory',
    async (language, code, message) => {
      const result = await runOnce(sandbox, { language, code });

      expect(result.limit).toBe('memory');
      expect(result.stderr).toMatch(message);
    },
    30_000,
  );

  it('stops many processes that together hold more than the memory: memory', async () => {
    // Each holds 100 MB, well under the per-process limit; six of them pass the box's 256 MiB.
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: 'for i in 1 2 3 4 5 6; do python3 -c "b = bytearray(100_000_000); import time; time.sleep(30)" & done; wait',
    });

    expect(result).toMatchObject({ limit: 'memory', exitCode: 137 });
    expect(result.durationMs).toBeLessThan(TEST_LIMITS.wallMs);
  }, 30_000);

  it('stops a fork bomb: processes', async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: 'b() { b | b & }; b; sleep 60',
    });

    expect(result.limit).toBe('processes');
    expect(result.durationMs).toBeLessThan(TEST_LIMITS.wallMs);
  }, 20_000);

  it('names a fork refused by the process limit: processes', async () => {
    const result = await runOnce(sandbox, {
      language: 'python',
      code: 'import os, time\nfor _ in range(200):\n    if os.fork() == 0:\n        time.sleep(30)',
    });

    expect(result.limit).toBe('processes');
    expect(result.stderr).toMatch(/Resource temporarily unavailable/);
  }, 20_000);

  it('stops 100 MB of output at the output limit, quickly: output', async () => {
    const result = await runOnce(sandbox, {
      language: 'python',
      code: 'import sys\nfor _ in range(100):\n    sys.stdout.write("x" * 1_000_000)',
    });

    expect(result.limit).toBe('output');
    expect(result.stdout.length).toBe(TEST_LIMITS.outputBytes);
    expect(result.durationMs).toBeLessThan(3_000);
  }, 20_000);

  it('counts stdout and stderr together against the output limit, each cut', async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: 'head -c 700000 /dev/zero | tr "\\0" o; head -c 700000 /dev/zero | tr "\\0" e >&2; sleep 60',
    });

    expect(result.limit).toBe('output');
    expect(result.stdout.length + result.stderr.length).toBe(TEST_LIMITS.outputBytes);
  }, 20_000);

  it('stops a run writing past its disk budget, and no file grows past it', async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: [
        'head -c 100000000 /dev/zero > /tmp/one; echo "one: $?"',
        'for i in 1 2 3 4; do head -c 30000000 /dev/zero > /workspace/part$i; done',
        'sleep 60',
      ].join('\n'),
    });

    expect(result.stdout).toMatch(/^one: 153$/m); // SIGXFSZ: the file size limit
    expect(result.limit).toBe('output');
    expect(result.durationMs).toBeLessThan(TEST_LIMITS.wallMs);
  }, 20_000);

  it('keeps the shared-memory tmpfs small', async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: 'head -c 100000000 /dev/zero > /dev/shm/big; echo "status $?"; du -k /dev/shm/big',
    });

    const kilobytes = Number(/^(\d+)/m.exec(result.stdout.split('\n')[1] ?? '')?.[1]);
    expect(result.stdout).toMatch(/status [1-9]/);
    expect(kilobytes * 1024).toBeLessThanOrEqual(TEST_LIMITS.memoryBytes / 8);
  });
});

describe('sandbox: runs and their processes', () => {
  it('leaves no process of a run behind, a background one or a double-forked daemon', async () => {
    const marker = `4242.${process.pid}`;
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: `sleep ${marker}1 & (setsid sleep ${marker}2 &) ; nohup sleep ${marker}3 >/dev/null 2>&1 & echo left`,
    });

    expect(result).toMatchObject({ stdout: 'left\n', exitCode: 0 });
    expect(hostProcessesWith(`sleep ${marker}`)).toEqual([]);
  });

  it('kills every process of a run stopped by a limit', async () => {
    const marker = `4343.${process.pid}`;
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: `(setsid sleep ${marker} &); sleep 600`,
    });

    expect(result.limit).toBe('wall');
    expect(hostProcessesWith(`sleep ${marker}`)).toEqual([]);
  }, 20_000);

  it('ends a run when its signal aborts, with every process of it', async () => {
    const marker = `4444.${process.pid}`;
    const started = performance.now();
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error('call cancelled')), 500);

    await expect(
      runOnce(sandbox, { language: 'shell', code: `sleep ${marker}`, signal: controller.signal }),
    ).rejects.toThrow('call cancelled');
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(hostProcessesWith(`sleep ${marker}`)).toEqual([]);
  });

  it('gives each of two concurrent runs its own process limit', async () => {
    // 40 processes each: together more than one box's 64, which the host user would count.
    const code = 'for i in $(seq 40); do sleep 3 & done; wait && echo "all forked"';
    const results = await Promise.all([
      runOnce(sandbox, { language: 'shell', code }),
      runOnce(sandbox, { language: 'shell', code }),
    ]);

    for (const result of results) {
      expect(result).toMatchObject({ stdout: 'all forked\n', stderr: '', exitCode: 0 });
    }
  }, 20_000);
});

describe('sandbox: the queue', () => {
  let single: Sandbox;
  beforeAll(async () => {
    single = await startTestSandbox({ maxConcurrent: 1 });
  });

  it('runs one at a time with SANDBOX_MAX_CONCURRENT=1, the others waiting', async () => {
    const code = 'date +%s%3N; sleep 0.5; date +%s%3N';
    const [first, second] = await Promise.all([
      runOnce(single, { language: 'shell', code }),
      runOnce(single, { language: 'shell', code }),
    ]);
    const times = (stdout: string) => stdout.trim().split('\n').map(Number);
    const [firstStart = 0, firstEnd = 0] = times(first?.stdout ?? '');
    const [secondStart = 0, secondEnd = 0] = times(second?.stdout ?? '');

    expect(firstStart < secondStart ? secondStart >= firstEnd : firstStart >= secondEnd).toBe(true);
  }, 20_000);

  it('lets a waiting run leave the queue when its signal aborts', async () => {
    const running = runOnce(single, { language: 'shell', code: 'sleep 1; echo first' });
    const controller = new AbortController();
    const waiting = runOnce(single, {
      language: 'shell',
      code: 'echo never',
      signal: controller.signal,
    });
    controller.abort(new Error('gave up waiting'));

    await expect(waiting).rejects.toThrow('gave up waiting');
    await expect(running).resolves.toMatchObject({ stdout: 'first\n' });
  }, 20_000);
});

describe('sandbox: start', () => {
  it('removes run directories a dead service left hours ago, and only those', async () => {
    const rootDir = join(tmpdir(), 'jarvis-sandbox-test');
    const [stale, recent] = [join(rootDir, 'run-stale-test'), join(rootDir, 'run-recent-test')];
    await mkdir(join(stale, 'tmp'), { recursive: true });
    await mkdir(recent, { recursive: true });
    const hoursAgo = new Date(Date.now() - 7 * 60 * 60 * 1000);
    await utimes(stale, hoursAgo, hoursAgo);
    try {
      await startTestSandbox();

      expect(existsSync(stale)).toBe(false);
      expect(existsSync(recent)).toBe(true);
    } finally {
      await rm(recent, { recursive: true, force: true });
    }
  });

  it('refuses to start without a working bwrap, saying why', async () => {
    await expect(startTestSandbox({ bwrap: '/nonexistent/bwrap' })).rejects.toThrow(
      /nonexistent\/bwrap.*No such file|ENOENT/,
    );
  });
});
