import { type ChildProcess, spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { rm, symlink, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox, SandboxResult } from './sandbox';
import {
  hostProcessesWith,
  isProcessAlive,
  runOnce,
  startTestSandbox,
  TEST_LIMITS,
} from './sandbox-test-fixture';

// The escape table of issue 29: every row is a real attempt from inside a real box, and every
// one must fail. The table of attempts and outcomes is printed at the end.

const ID = randomUUID().slice(0, 8);
const SECRET = `escape-secret-${randomUUID()}`;
const HOST_FILES = [
  `/root/jarvis-escape-${ID}.txt`,
  `/var/tmp/jarvis-escape-${ID}.txt`,
  join(tmpdir(), `jarvis-escape-${ID}.txt`),
];
const POSTGRES_SOCKET = '/var/run/postgresql/.s.PGSQL.5432';
const CONTAINER_ENGINE_SOCKETS = [
  '/var/run/docker.sock',
  '/run/podman/podman.sock',
  '/run/user/0/podman/podman.sock',
];
const UNIX_SOCKET = join(tmpdir(), `jarvis-escape-${ID}.sock`);
const ABSTRACT_SOCKET = `jarvis-escape-${ID}`;

const table: Array<{ attempt: string; outcome: string }> = [];
let sandbox: Sandbox;

function record(attempt: string, outcome: string): void {
  table.push({ attempt, outcome: outcome.replaceAll('|', '\\|').replaceAll('\n', ' ') });
}

function firstLines(text: string, count = 2): string {
  return text.trim().split('\n').slice(0, count).join(' / ');
}

function summary(result: SandboxResult): string {
  const limit = result.limit ? `, limit \`${result.limit}\`` : '';
  // What the interpreter said about the failure (a traceback's last line, V8's fatal error).
  const lines = `${result.stderr}${result.stdout}`.trim().split('\n');
  const said =
    lines.findLast((line) => /^(FATAL ERROR|\w*Error\b)|unavailable/.test(line)) ?? lines[0];
  return `exit ${result.exitCode}${limit} after ${result.durationMs} ms${said ? `: ${said}` : ''}`;
}

// A listener that counts whoever reaches it.
async function countingServer(listen: (server: Server) => void) {
  const counter = { hits: 0, server: createServer((socket) => socket.destroy()) };
  counter.server.on('connection', () => {
    counter.hits += 1;
  });
  await new Promise<void>((resolve) => {
    counter.server.once('listening', resolve);
    listen(counter.server);
  });
  return counter;
}

// Proves a listener counts: the host itself reaches it once, then the count starts over.
async function probe(counter: { hits: number }, connect: () => import('node:net').Socket) {
  await new Promise<void>((resolve, reject) => {
    const socket = connect();
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(counter.hits).toBe(1);
  counter.hits = 0;
}

function hostAddresses(): string[] {
  return Object.values(networkInterfaces())
    .flat()
    .filter((address) => address?.family === 'IPv4')
    .map((address) => address?.address ?? '');
}

beforeAll(async () => {
  for (const path of HOST_FILES) await writeFile(path, `${SECRET}\n`, { mode: 0o644 });
  // The service's environment, as the tools service would have its secrets.
  process.env.JARVIS_ESCAPE_SECRET = SECRET;
  sandbox = await startTestSandbox();
});

afterAll(async () => {
  for (const path of HOST_FILES) await rm(path, { force: true });
  delete process.env.JARVIS_ESCAPE_SECRET;
  const rows = table.map((row) => `| ${row.attempt} | ${row.outcome} |`);
  console.log(['', '| attempt | outcome |', '| --- | --- |', ...rows, ''].join('\n'));
});

describe('escape: reading what is not the box', () => {
  it('cannot read /etc/shadow', async () => {
    expect(readFileSync('/etc/shadow', 'utf8')).toContain('root:');
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: [
        'cat /etc/shadow 2>&1',
        'python3 -c \'print(open("/etc/shadow").read())\' 2>&1 | tail -1',
        'ls /etc | tr "\\n" " "',
      ].join('\n'),
    });

    expect(result.stdout).not.toContain('root:');
    expect(result.stdout).toContain('cat: /etc/shadow: No such file or directory');
    expect(result.stdout).toContain(
      "FileNotFoundError: [Errno 2] No such file or directory: '/etc/shadow'",
    );
    expect(result.stdout).toContain('alternatives fonts group ld.so.cache');
    expect(result.stdout).not.toMatch(/shadow |hosts|resolv/);
    record(
      'read `/etc/shadow` (cat, Python open); list /etc',
      `${firstLines(result.stdout, 2)}; /etc has only: ${result.stdout.split('\n')[2]}`,
    );
  });

  it("cannot read the host's files outside the box", async () => {
    const paths = [...HOST_FILES, '/work/main/package.json', '/home', '/var/lib/postgresql'];
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: `for f in ${paths.join(' ')}; do cat "$f"; done; ls / /root /var 2>&1`,
    });

    expect(`${result.stdout}${result.stderr}`).not.toContain(SECRET);
    for (const path of HOST_FILES) expect(result.stderr).toContain(`${path}: No such file`);
    expect(result.stdout).toMatch(
      /\/:\nbin\ndev\netc\nlib\nlib64\nproc\nrun\nsbin\ntmp\nusr\nworkspace\n/,
    );
    record(
      `read host files made for the test (${HOST_FILES.join(', ')}), the app directory`,
      summary(result),
    );
  });

  it("cannot read the service's environment, directly or through /proc/*/environ", async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: [
        'env',
        'for f in /proc/1/environ /proc/*/environ; do tr "\\0" "\\n" < "$f"; done',
        'python3 -c "import os; print(dict(os.environ))"',
        'node -e "console.log(JSON.stringify(process.env))"',
      ].join('\n'),
    });

    expect(process.env.JARVIS_ESCAPE_SECRET).toBe(SECRET);
    expect(`${result.stdout}${result.stderr}`).not.toContain(SECRET);
    expect(result.stdout).not.toMatch(/DATABASE_URL|NATS_URL|JARVIS_/);
    const variables = new Set(result.stdout.split('\n').map((line) => line.split('=')[0]));
    record(
      "the service's environment (a secret set in the test's process.env): env, /proc/1/environ, /proc/*/environ, Python, Node",
      `secret not seen; variables visible: ${[...variables].filter((name) => /^[A-Z_]+$/.test(name ?? '')).join(', ')}`,
    );
  });

  it("cannot see or trace the host's processes", async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: `ls /proc | grep -c '^[0-9]'; cat /proc/${process.pid}/cmdline; ls /proc/${process.pid}`,
    });

    expect(Number(result.stdout.split('\n')[0])).toBeLessThan(10);
    expect(result.stderr).toContain('No such file');
    record(
      "see the host's processes (/proc of the test runner's pid)",
      `${result.stdout.split('\n')[0]} processes in the box's /proc; ${firstLines(result.stderr, 1)}`,
    );
  });
});

describe('escape: writing outside the scratch directory and the workspace', () => {
  it('cannot write to /usr, /etc, /, its code, /dev, /proc or /sys', async () => {
    const targets = [
      `/usr/escape-${ID}`,
      `/usr/bin/escape-${ID}`,
      `/etc/escape-${ID}`,
      '/etc/passwd',
      `/escape-${ID}`,
      '/run/code/main.sh',
      `/dev/escape-${ID}`,
      `/proc/escape-${ID}`,
      `/sys/escape-${ID}`,
    ];
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: `for p in ${targets.join(' ')}; do (echo x >> "$p") 2>/dev/null && echo "WROTE $p" || echo "refused $p"; done; touch /tmp/ok /workspace/ok && echo "scratch and workspace writable"`,
    });

    expect(result.stdout).not.toContain('WROTE');
    expect(result.stdout).toContain('scratch and workspace writable');
    for (const path of [`/usr/escape-${ID}`, `/usr/bin/escape-${ID}`, `/etc/escape-${ID}`]) {
      expect(existsSync(path)).toBe(false);
    }
    record(
      `write to ${targets.join(', ')}`,
      `all ${targets.length} refused (read-only file system or no such directory); /tmp and /workspace writable`,
    );
  });
});

describe('escape: network', () => {
  let tcp: Awaited<ReturnType<typeof countingServer>>;
  beforeAll(async () => {
    tcp = await countingServer((server) => server.listen(0, '0.0.0.0'));
  });
  afterAll(() => tcp.server.close());

  it('cannot reach a TCP listener of the host, on 127.0.0.1 or its other addresses', async () => {
    const address = tcp.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const { connect } = await import('node:net');
    await probe(tcp, () => connect(port, '127.0.0.1'));
    const targets = hostAddresses();
    expect(targets).toContain('127.0.0.1');
    const shell = await runOnce(sandbox, {
      language: 'shell',
      code: [
        `for a in ${targets.join(' ')}; do (echo hi > /dev/tcp/$a/${port}) 2>&1 | tail -1; done`,
        `node -e "require('net').connect(${port}, '127.0.0.1').on('connect', () => console.log('CONNECTED')).on('error', (e) => console.log('node', e.code))"`,
      ].join('\n'),
    });
    const python = await runOnce(sandbox, {
      language: 'python',
      code: [
        'import socket',
        `for address in ${JSON.stringify(targets)}:`,
        '    try:',
        `        socket.create_connection((address, ${port}), timeout=2); print("CONNECTED", address)`,
        '    except OSError as error: print("python", address, error)',
      ].join('\n'),
    });
    const result = { stdout: `${shell.stdout}${python.stdout}` };

    for (const target of targets) {
      expect(shell.stdout).toContain(`/dev/tcp/${target}/${port}: `);
      expect(python.stdout).toContain(`python ${target} [Errno`);
    }
    expect(shell.stdout).toContain('node ECONNREFUSED');
    expect(result.stdout).not.toContain('CONNECTED');
    expect(tcp.hits).toBe(0);
    record(
      `TCP to a host listener (counting) on ${targets.map((a) => `${a}:${port}`).join(', ')}, from bash, Python and Node`,
      `listener hits: ${tcp.hits}; ${firstLines(result.stdout, 2 * targets.length + 1).replaceAll('/run/code/main.sh: line 1: ', '')}`,
    );
  });

  it('cannot reach any other address, nor resolve a name', async () => {
    const result = await runOnce(sandbox, {
      language: 'python',
      code: [
        'import socket',
        'for target in [("1.1.1.1", 443), ("8.8.8.8", 53), ("2606:4700:4700::1111", 443)]:',
        '    try:',
        '        socket.create_connection(target, timeout=2); print("CONNECTED", target)',
        '    except OSError as error: print(target[0], error)',
        'try:',
        '    print("RESOLVED", socket.getaddrinfo("example.com", 443))',
        'except OSError as error: print("example.com", error)',
      ].join('\n'),
    });

    expect(result.stdout).not.toMatch(/CONNECTED|RESOLVED/);
    expect(result.stdout).toContain('Network is unreachable');
    record(
      'TCP to 1.1.1.1:443, 8.8.8.8:53, [2606:4700:4700::1111]:443; DNS for example.com',
      firstLines(result.stdout, 4),
    );
  });

  it("cannot connect to the host's Unix sockets: Postgres's, a container engine's, a test listener, an abstract one", async () => {
    const unix = await countingServer((server) => server.listen(UNIX_SOCKET));
    const abstract = await countingServer((server) => server.listen(`\0${ABSTRACT_SOCKET}`));
    try {
      const { connect } = await import('node:net');
      await probe(unix, () => connect(UNIX_SOCKET));
      await probe(abstract, () => connect(`\0${ABSTRACT_SOCKET}`));
      const paths = [POSTGRES_SOCKET, ...CONTAINER_ENGINE_SOCKETS, UNIX_SOCKET];
      const python = await runOnce(sandbox, {
        language: 'python',
        code: [
          'import socket',
          `for path in ${JSON.stringify([...paths, `\0${ABSTRACT_SOCKET}`])}:`,
          '    s = socket.socket(socket.AF_UNIX)',
          '    try:',
          '        s.connect(path); print("CONNECTED", repr(path))',
          '    except OSError as error: print(repr(path), error)',
        ].join('\n'),
      });
      const psql = await runOnce(sandbox, {
        language: 'shell',
        code: 'psql -h /var/run/postgresql -U postgres -c "select 1" 2>&1 | tail -1',
      });
      const result = { stdout: `${python.stdout}psql: ${psql.stdout}` };

      expect(python.stdout.trim().split('\n')).toHaveLength(paths.length + 1);
      expect(python.stdout).toContain(`'\\x00${ABSTRACT_SOCKET}' [Errno 111] Connection refused`);
      expect(result.stdout).not.toContain('CONNECTED');
      expect(psql.stdout).not.toMatch(/\(1 row\)/);
      expect(unix.hits).toBe(0);
      expect(abstract.hits).toBe(0);
      record(
        `Unix sockets: ${POSTGRES_SOCKET} (Postgres, trust auth, ${existsSync(POSTGRES_SOCKET) ? 'present' : 'absent'} on the host), ${CONTAINER_ENGINE_SOCKETS.join(', ')}, a counting test listener, an abstract-namespace listener; psql`,
        `test listener accepts: ${unix.hits}, abstract listener accepts: ${abstract.hits}; ${firstLines(result.stdout, paths.length + 2)}`,
      );
    } finally {
      unix.server.close();
      abstract.server.close();
    }
  });
});

describe('escape: exhausting the host', () => {
  it.each([
    ['a shell fork bomb', 'shell', ':(){ :|:& };:; wait', 'processes'],
    ['a Python fork loop', 'python', 'import os\nwhile True: os.fork()', 'processes'],
    ['a Python memory bomb', 'python', 'a = []\nwhile True: a.append(bytearray(10**7))', 'memory'],
    [
      'a Node memory bomb',
      'javascript',
      'const a = []; for (;;) a.push(new Array(1e6).fill(1));',
      'memory',
    ],
    [
      'a memory bomb over many processes (8 × 200 MB, each under the per-process limit)',
      'shell',
      'for i in $(seq 8); do python3 -c "b = bytearray(200_000_000); import time; time.sleep(60)" & done; wait',
      'memory',
    ],
    ['an infinite loop', 'python', 'while True: pass', 'cpu'],
    ['an infinite loop in Node', 'javascript', 'for (;;) {}', 'cpu'],
    ['sleeping past the wall time', 'shell', 'sleep 3600', 'wall'],
  ] as const)(
    'stops %s',
    async (name, language, code, limit) => {
      const result = await runOnce(sandbox, { language, code });

      expect(result.limit).toBe(limit);
      expect(result.durationMs).toBeLessThan(TEST_LIMITS.wallMs + 3_000);
      record(name, summary(result).slice(0, 160));
    },
    20_000,
  );

  it('stops 100 MB of output at the output limit, quickly', async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: 'head -c 100000000 /dev/urandom | base64 -w 0',
    });

    expect(result.limit).toBe('output');
    expect(result.stdout.length).toBe(TEST_LIMITS.outputBytes);
    expect(result.durationMs).toBeLessThan(3_000);
    record(
      '100 MB of output',
      `limit \`output\` after ${result.durationMs} ms, stdout cut at ${result.stdout.length} bytes`,
    );
  });
});

describe('escape: signalling processes outside the box', () => {
  let hostSleep: ChildProcess;
  beforeAll(() => {
    hostSleep = spawn('sleep', ['300'], { stdio: 'ignore' });
  });
  afterAll(() => hostSleep.kill('SIGKILL'));

  it('cannot kill a host process by pid, nor everything with kill -9 -1', async () => {
    const pid = hostSleep.pid ?? 0;
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: `kill -9 ${pid} ${process.pid} ${process.ppid}; python3 -c "import os; os.kill(${pid}, 9)"; kill -9 -1; echo "the shell itself goes on"`,
    });
    await new Promise((resolve) => setTimeout(resolve, 200));

    expect(isProcessAlive(pid)).toBe(true);
    expect(isProcessAlive(process.pid)).toBe(true);
    expect(result.stderr).toContain('No such process');
    expect(result.stdout).toContain('the shell itself goes on');
    record(
      `kill -9 a host \`sleep\` (pid ${pid}), the test runner and its parent by pid; os.kill; kill -9 -1`,
      `host sleep alive: ${isProcessAlive(pid)}; ${firstLines(result.stderr, 1)}; kill -9 -1 reached only the box's own processes (exit ${result.exitCode})`,
    );
  });
});

describe('escape: symlinks and ..', () => {
  it('cannot reach host files through a symlink in the workspace, the caller’s or its own', async () => {
    const result = await runOnce(
      sandbox,
      {
        language: 'shell',
        code: [
          'ln -s /etc/shadow /workspace/own-link; cat /workspace/own-link',
          'cat planted-secret planted-shadow',
          'ls planted-up/',
        ].join('\n'),
      },
      async (workspaceDir) => {
        await symlink(HOST_FILES[0] ?? '', join(workspaceDir, 'planted-secret'));
        await symlink('/etc/shadow', join(workspaceDir, 'planted-shadow'));
        await symlink('../../../..', join(workspaceDir, 'planted-up'));
      },
    );

    expect(`${result.stdout}${result.stderr}`).not.toContain(SECRET);
    expect(result.stdout).not.toContain('root:');
    expect(result.stderr).toContain('own-link: No such file or directory');
    record(
      'a symlink to /etc/shadow made in the box; symlinks to a host file, /etc/shadow and ../../../.. planted in the workspace before the run',
      `each resolves inside the box's own view: ${firstLines(result.stderr, 3)}; planted-up lists the box's root`,
    );
  });

  it('cannot leave the box with .. paths', async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: [
        `cat /workspace/../..${HOST_FILES[0]} ../../../../etc/shadow`,
        `(echo x > /workspace/../../escape-${ID}) 2>&1`,
        'ls /workspace/../../..',
      ].join('\n'),
    });

    expect(`${result.stdout}${result.stderr}`).not.toContain(SECRET);
    expect(result.stdout).toContain('Read-only file system');
    expect(result.stdout).toMatch(/^bin$/m);
    record(
      'paths with .. out of /workspace (read a host file, /etc/shadow; write above it; list above /)',
      `${firstLines(result.stderr, 2)}; write: ${firstLines(result.stdout, 1)}; /workspace/../../.. is the box's root`,
    );
  });
});

describe('escape: outliving the run', () => {
  it('leaves no process running after the run, however it was started', async () => {
    const marker = `5151.${process.pid}`;
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: [
        `sleep ${marker}1 &`,
        `(setsid sleep ${marker}2 &)`,
        `nohup sleep ${marker}3 >/dev/null 2>&1 & disown`,
        `(trap '' HUP TERM; exec sleep ${marker}4) &`,
        `python3 -c "
import os, subprocess
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.execvp('sleep', ['sleep', '${marker}5'])
"`,
        'echo "left behind"',
      ].join('\n'),
    });

    expect(result).toMatchObject({ stdout: 'left behind\n', exitCode: 0 });
    const survivors = hostProcessesWith(`sleep ${marker}`);
    expect(survivors).toEqual([]);
    record(
      'leave processes running: `&`, setsid, nohup + disown, ignoring HUP/TERM, a double-forked Python daemon',
      `run ended (exit ${result.exitCode}); processes of it on the host afterwards: ${survivors.length}`,
    );
  });
});

describe('escape: gaining privileges', () => {
  it('cannot become root, make namespaces or mount', async () => {
    const result = await runOnce(sandbox, {
      language: 'shell',
      code: [
        'unshare -Ur id 2>&1 | tail -1',
        'su -c id root </dev/null 2>&1 | tail -1',
        'mount -t tmpfs none /workspace 2>&1 | head -1',
        'python3 -c "import os; os.setuid(0)" 2>&1 | tail -1',
        'grep Cap /proc/self/status | tr "\\n\\t" "  "',
      ].join('\n'),
    });

    expect(result.stdout).not.toMatch(/uid=0/);
    expect(result.stdout).toMatch(/CapEff:\s+0000000000000000/);
    record(
      'become root or gain capabilities: unshare -Ur, su, mount, setuid(0)',
      firstLines(result.stdout, 5),
    );
  });
});
