// Runs inside the tools image, as its user (compose-stage.sh pipes it to `node -` in /app), and
// proves that run_code's box holds in the container as compose.yaml sets it up. Two ways:
//   node - tool      asks the running tools service for run_code over NATS (tools.invoke), as the
//                    orchestrator does: Python prints and imports numpy; a TCP connection to
//                    another container (postgres:5432, nats:4222, by address) and to the
//                    service's own port on 127.0.0.1 fails; /proc shows only the box's processes; the service's
//                    environment (DATABASE_URL) is nowhere in the box.
//   node - profile   starts bubblewrap itself, with the namespaces and mounts run_code's box is
//                    made of, and no service: for the image run by hand under a seccomp profile
//                    (infra/tools-seccomp.json), which CI's stack cannot take through podman.
// Prints one summary line; exits 1 with the reason otherwise.
// CommonJS on purpose: `node -` reads stdin as a script, and resolves packages from /app.
const { randomUUID } = require('node:crypto');
const { execFileSync } = require('node:child_process');
const { lookup } = require('node:dns/promises');

// Python run in the box: what it can see and reach, as one JSON line.
const PROBE = String.raw`
import json, os, socket
seen = {"pids": sorted(int(p) for p in os.listdir("/proc") if p.isdigit())}
seen["commands"] = []
seen["secrets"] = []
for pid in seen["pids"]:
    try:
        seen["commands"].append(open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode()[:80])
        if b"DATABASE_URL" in open(f"/proc/{pid}/environ", "rb").read():
            seen["secrets"].append(f"/proc/{pid}/environ")
    except OSError:
        pass
if "DATABASE_URL" in os.environ:
    seen["secrets"].append("os.environ")
seen["connected"] = []
for host, port in TARGETS:
    try:
        socket.create_connection((host, port), timeout=3).close()
        seen["connected"].append(f"{host}:{port}")
    except OSError as error:
        seen.setdefault("refused", []).append(f"{host}:{port} {type(error).__name__}")
print(json.dumps(seen))
`;

// The probe with what it must fail to reach: [host, port] pairs (a JSON list is Python too).
function probeCode(targets) {
  return `TARGETS = ${JSON.stringify(targets)}\n${PROBE}`;
}

// Fails unless the probe's JSON says the box is sealed; returns a short account of it.
function checkProbe(stdout) {
  const seen = JSON.parse(stdout.trim().split('\n').pop());
  if (seen.connected.length > 0) throw new Error(`the box connected to ${seen.connected}`);
  if (seen.secrets.length > 0) throw new Error(`the service's DATABASE_URL is in ${seen.secrets}`);
  // bubblewrap's own init and the code it runs: a handful, none of them the service.
  const service = seen.commands.filter((command) => command.includes('dist/main.js'));
  if (service.length > 0 || seen.pids.length > 8) {
    throw new Error(`/proc shows more than the box: ${JSON.stringify(seen.commands)}`);
  }
  return `${(seen.refused ?? []).length} connections refused, /proc shows ${seen.pids.length} processes, no DATABASE_URL`;
}

async function invokeRunCode(nc, language, code) {
  const request = {
    userId: randomUUID(),
    name: 'run_code',
    arguments: { language, code },
    timeoutMs: 90_000,
  };
  const message = await nc.request(
    `${process.env.NATS_NAMESPACE || 'jarvis'}.tools.invoke`,
    new TextEncoder().encode(JSON.stringify(request)),
    { timeout: 100_000 },
  );
  const reply = JSON.parse(new TextDecoder().decode(message.data));
  if (!reply.ok) throw new Error(`run_code: ${JSON.stringify(reply.error)}`);
  const result = reply.data.result;
  if (result.exitCode !== 0) {
    throw new Error(`run_code ${language} exited ${result.exitCode}: ${JSON.stringify(result)}`);
  }
  return result;
}

async function tool() {
  const { connect } = require('nats');
  const nc = await connect({ servers: process.env.NATS_URL });
  try {
    const started = Date.now();
    const hello = await invokeRunCode(
      nc,
      'python',
      'import numpy\nprint("hello from the box", numpy.arange(4).sum())',
    );
    if (!hello.stdout.includes('hello from the box 6')) {
      throw new Error(`python printed ${JSON.stringify(hello)}`);
    }
    const helloMs = Date.now() - started;
    const shell = await invokeRunCode(nc, 'shell', 'echo "$((6 * 7))"');
    if (shell.stdout.trim() !== '42') throw new Error(`shell printed ${JSON.stringify(shell)}`);
    // The other containers on the compose network, and the tools service's own HTTP port. Their
    // addresses are looked up here: the box has no resolver, so a name alone would fail even
    // with the network open.
    const others = [
      [(await lookup('postgres')).address, 5432],
      [(await lookup('nats')).address, 4222],
      ['127.0.0.1', Number(process.env.HTTP_PORT || 8084)],
    ];
    const probe = await invokeRunCode(nc, 'python', probeCode(others));
    return `run_code: python with numpy (${helloMs} ms) and shell answer; ${checkProbe(probe.stdout)}`;
  } finally {
    await nc.close();
  }
}

// bubblewrap as run_code's box uses it, started here: the container's seccomp profile, masked
// paths and capabilities are what is under test. The service's environment is not passed on
// (bubblewrap's own process would keep it in /proc/1/environ), and the ambient capability podman
// gives the image's user is cleared first: bubblewrap refuses to start with one.
function profile() {
  const stdout = execFileSync(
    'setpriv',
    [
      '--ambient-caps',
      '-all',
      '--',
      'bwrap',
      '--unshare-all',
      '--unshare-user',
      '--disable-userns',
      '--die-with-parent',
      '--new-session',
      '--cap-drop',
      'ALL',
      '--clearenv',
      '--ro-bind',
      '/usr',
      '/usr',
      '--symlink',
      'usr/bin',
      '/bin',
      '--symlink',
      'usr/lib',
      '/lib',
      '--symlink',
      'usr/lib64',
      '/lib64',
      '--proc',
      '/proc',
      '--dev',
      '/dev',
      '--tmpfs',
      '/tmp',
      '--remount-ro',
      '/',
      '--setenv',
      'PATH',
      '/usr/bin',
      'python3',
      '-c',
      probeCode([]),
    ],
    { env: {}, encoding: 'utf8', timeout: 30_000 },
  );
  return `bubblewrap ${execFileSync('bwrap', ['--version'], { env: {}, encoding: 'utf8' }).trim()}, uid ${process.getuid()}: the box started; ${checkProbe(stdout)}`;
}

async function main() {
  if (process.getuid() === 0) throw new Error('runs as root: the image must run as its node user');
  const [mode = 'tool'] = process.argv.slice(2);
  console.log(mode === 'profile' ? profile() : await tool());
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
