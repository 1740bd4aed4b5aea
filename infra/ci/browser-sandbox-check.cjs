// Runs inside the tools image, as its user (compose-stage.sh pipes it to `node -` in /app), and
// proves that Chromium there keeps its sandbox. Two ways:
//   node - launch   launches the image's Chromium as the tools service does (playwright-core,
//                   sandbox on, BROWSER_EXECUTABLE), renders a page whose text only JavaScript
//                   writes, and reads chrome://sandbox;
//   node - tool URL asks the running tools service for browser_open of URL over NATS
//                   (tools.invoke), so the service's own Chromium opens it.
// Either way every Chromium process is then checked: no --no-sandbox on any command line, and
// each renderer under a seccomp-bpf filter in a PID namespace of its own. Prints one summary
// line; exits 1 with the reason otherwise.
// CommonJS on purpose: `node -` reads stdin as a script, and resolves packages from /app.
const { randomUUID } = require('node:crypto');
const { readFileSync, readdirSync } = require('node:fs');

// The Chromium processes now running: pid, command line, seccomp mode, PID namespace depth.
function chromiumProcesses() {
  const found = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let cmdline;
    let status;
    try {
      // Chromium rewrites its process title: one string with spaces, not NUL-separated args.
      cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split(/[\0 ]/).filter(Boolean);
      status = readFileSync(`/proc/${pid}/status`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    if (!/chrom/.test(cmdline[0] ?? '')) continue;
    const field = (name) => (status.match(new RegExp(`^${name}:\\s*(.*)$`, 'm')) ?? [])[1] ?? '';
    found.push({
      pid: Number(pid),
      cmdline,
      type: (cmdline.find((arg) => arg.startsWith('--type=')) ?? '--type=browser').slice(7),
      seccomp: Number(field('Seccomp')),
      pidNamespaces: field('NSpid').split(/\s+/).filter(Boolean).length,
    });
  }
  return found;
}

// Every Chromium process must be sandboxed; returns how many renderers are.
function checkProcesses() {
  const processes = chromiumProcesses();
  const withoutSandbox = processes.filter((p) => p.cmdline.includes('--no-sandbox'));
  if (withoutSandbox.length > 0) throw new Error(`--no-sandbox on pid ${withoutSandbox[0].pid}`);
  const renderers = processes.filter((p) => p.type === 'renderer');
  if (renderers.length === 0)
    throw new Error(`no renderer among ${processes.length} Chromium processes`);
  const loose = renderers.filter((p) => p.seccomp !== 2 || p.pidNamespaces < 2);
  if (loose.length > 0) {
    throw new Error(
      `renderers outside the sandbox: ${JSON.stringify(loose.map(({ cmdline, ...p }) => p))}`,
    );
  }
  return renderers.length;
}

async function launch() {
  const { chromium } = require('playwright-core');
  const browser = await chromium.launch({
    executablePath: process.env.BROWSER_EXECUTABLE || '/usr/bin/chromium',
    chromiumSandbox: true,
    args: ['--disable-dev-shm-usage', '--disable-gpu'],
    timeout: 60_000,
  });
  try {
    const page = await browser.newPage();
    await page.goto(
      `data:text/html,<title>t</title><body><script>document.body.textContent = ['rendered', 'by', 'script'].join(' ')</script>`,
    );
    const text = await page.innerText('body');
    if (text !== 'rendered by script') throw new Error(`the page rendered ${JSON.stringify(text)}`);
    const sandboxPage = await browser.newPage();
    await sandboxPage.goto('chrome://sandbox');
    // "Layer 1 Sandbox  Namespace", "PID namespaces  Yes", ..., "You are adequately sandboxed."
    const report = (await sandboxPage.innerText('body')).replace(/\s+/g, ' ');
    const want = [
      'Layer 1 Sandbox Namespace',
      'PID namespaces Yes',
      'Network namespaces Yes',
      'Seccomp-BPF sandbox Yes',
    ];
    const missing = want.filter((line) => !report.includes(line));
    if (missing.length > 0 || !report.includes('You are adequately sandboxed')) {
      throw new Error(`chrome://sandbox: ${report}`);
    }
    const renderers = checkProcesses();
    return `Chromium ${browser.version()}, uid ${process.getuid()}: chrome://sandbox adequately sandboxed (namespaces, seccomp-bpf); ${renderers} renderers sandboxed`;
  } finally {
    await browser.close();
  }
}

async function tool(url) {
  const { connect } = require('nats');
  const nc = await connect({ servers: process.env.NATS_URL });
  try {
    const started = Date.now();
    const request = {
      userId: randomUUID(),
      // A run's page stays open after the call (a call outside a run closes its page as it
      // returns), so its renderer is still there to be checked below.
      runId: randomUUID(),
      name: 'browser_open',
      arguments: { url },
      timeoutMs: 60_000,
    };
    const message = await nc.request(
      `${process.env.NATS_NAMESPACE || 'jarvis'}.tools.invoke`,
      new TextEncoder().encode(JSON.stringify(request)),
      { timeout: 70_000 },
    );
    const reply = JSON.parse(new TextDecoder().decode(message.data));
    if (!reply.ok) throw new Error(`browser_open: ${JSON.stringify(reply.error)}`);
    const page = reply.data.result;
    if (!page.title || typeof page.text !== 'string')
      throw new Error(`browser_open answered ${JSON.stringify(page).slice(0, 300)}`);
    const renderers = checkProcesses();
    return `browser_open ${url}: "${page.title}", ${page.text.length} characters, ${Date.now() - started} ms; the service's Chromium: ${renderers} renderers sandboxed`;
  } finally {
    await nc.close();
  }
}

async function main() {
  if (process.getuid() === 0) throw new Error('runs as root: the image must run as its node user');
  const [mode = 'launch', url] = process.argv.slice(2);
  console.log(mode === 'tool' ? await tool(url) : await launch());
}

main().catch((error) => {
  console.error(error instanceof Error ? error.message : String(error));
  process.exit(1);
});
