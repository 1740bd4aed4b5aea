import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BusError } from '@jarvis/bus';
import type { GuardedProxy, ProxySession } from '@jarvis/net-guard';
import type { Logger } from '@jarvis/telemetry';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';

export type BrowserPoolOptions = {
  // Chromium's binary (Debian's /usr/bin/chromium).
  executablePath: string;
  // The user Chromium runs as when this process is root: its sandbox refuses to start as root,
  // and without the sandbox a page's exploit would run beside the service's secrets.
  user: string;
  // Pages open at once, over all runs; a call past it waits for one to close.
  maxPages: number;
  // Longest one page takes to load.
  pageTimeoutMs: number;
  // Bytes one page load may receive from the web, subresources included.
  pageMaxBytes: number;
  // A run's page unused this long is closed.
  idleMs: number;
  // Every request Chromium makes goes through it; each run's context has a session of its own.
  proxy: GuardedProxy;
  logger: Logger;
};

// Whose page it is. A run keeps its page between tool calls (browser_act acts on what
// browser_open showed); a call outside a run gets a page of its own, closed when it returns.
export type PageOwner = { userId: string; runId: string | undefined };

export type RunPage = {
  page: Page;
  // The proxy session of the run's context: its byte count and the connections it refused.
  session: ProxySession;
  limits: { pageTimeoutMs: number; pageMaxBytes: number };
  // Closes this page and its context now (a page past its byte limit, whose proxy session has
  // cut it off); the run's next call opens a fresh one.
  discard(): Promise<void>;
};

type Entry = {
  key: string;
  owner: PageOwner;
  // Settles once the context and its page are open.
  ready: Promise<RunPage>;
  run: RunPage | undefined;
  // Calls on this page run one after another: two at once would navigate under each other.
  queue: Promise<unknown>;
  busy: number;
  lastUsed: number;
  idleTimer: NodeJS.Timeout | undefined;
  isClosed: boolean;
};

// Playwright's flags plus these: no traffic of Chromium's own (updates, sync, QUIC, DNS
// prefetch), /dev/shm left alone (small in containers), and WebRTC kept off UDP that does not
// go through the proxy: a page's STUN packets would otherwise reach any address, loopback too.
const CHROMIUM_ARGS = [
  '--disable-gpu',
  '--disable-quic',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
  '--dns-prefetch-disable',
  '--force-webrtc-ip-handling-policy=disable_non_proxied_udp',
  '--webrtc-ip-handling-policy=disable_non_proxied_udp',
];
const VIEWPORT = { width: 1280, height: 800 };
const SYSTEM_PATH = '/usr/local/bin:/usr/bin:/bin';

// One Chromium for the whole service, launched on first use and again if it dies; one context
// (cookies, storage, proxy credentials) per run, so nothing is shared between users or runs.
export class BrowserPool {
  private readonly entries = new Map<string, Entry>();
  private readonly waiters = new Set<() => void>();
  private browser: Promise<Browser> | undefined;
  private wrapperDir: string | undefined;
  private isClosing = false;

  constructor(private readonly options: BrowserPoolOptions) {}

  // Runs `work` on the owner's page, opening it if there is none. When maxPages are open the
  // least recently used idle one is closed; when none is idle the call waits its turn.
  async usePage<T>(
    owner: PageOwner,
    work: (run: RunPage) => Promise<T>,
    signal: AbortSignal,
  ): Promise<T> {
    return this.runOn(await this.reserve(owner, signal), work, signal);
  }

  // Runs `work` on the run's page if it has one; undefined (and nothing opened) otherwise.
  async useCurrentPage<T>(
    owner: PageOwner,
    work: (run: RunPage) => Promise<T>,
    signal: AbortSignal,
  ): Promise<T | undefined> {
    if (owner.runId === undefined) return undefined;
    const entry = this.entries.get(keyOf(owner));
    if (!entry) return undefined;
    return this.runOn(hold(entry), work, signal);
  }

  openPages(): number {
    return this.entries.size;
  }

  // The run ended: its pages and cookies go.
  async closeRun(runId: string): Promise<void> {
    const closing = [...this.entries.values()].filter((entry) => entry.owner.runId === runId);
    await Promise.all(closing.map((entry) => this.closeEntry(entry)));
  }

  async close(): Promise<void> {
    this.isClosing = true;
    await Promise.all([...this.entries.values()].map((entry) => this.closeEntry(entry)));
    const browser = await this.browser?.catch(() => undefined);
    this.browser = undefined;
    await browser?.close().catch(() => {});
    if (this.wrapperDir) await rm(this.wrapperDir, { recursive: true, force: true });
    for (const wake of this.waiters) wake();
  }

  private async runOn<T>(
    entry: Entry,
    work: (run: RunPage) => Promise<T>,
    signal: AbortSignal,
  ): Promise<T> {
    // A call whose time is up closes the page under whatever it was doing: Playwright's waits
    // take no signal, and a page left loading would hold its slot and its bytes.
    const onAbort = () => void this.closeEntry(entry);
    const turn = entry.queue.then(async () => {
      signal.throwIfAborted();
      signal.addEventListener('abort', onAbort, { once: true });
      return work(await entry.ready);
    });
    entry.queue = turn.catch(() => {});
    try {
      return await turn;
    } finally {
      signal.removeEventListener('abort', onAbort);
      entry.busy -= 1;
      entry.lastUsed = Date.now();
      if (entry.owner.runId === undefined) await this.closeEntry(entry);
      else if (entry.busy === 0 && !entry.isClosed) {
        entry.idleTimer = setTimeout(() => void this.closeEntry(entry), this.options.idleMs);
        entry.idleTimer.unref();
      }
      this.wake();
    }
  }

  // The owner's page, held busy (so no other call closes it to make room) before this returns:
  // its own if it has one, else a new one once there is room.
  private async reserve(owner: PageOwner, signal: AbortSignal): Promise<Entry> {
    for (;;) {
      if (this.isClosing) throw new BusError('unavailable', 'the browser is shutting down');
      signal.throwIfAborted();
      // Someone else may have opened it while this call waited.
      const existing = this.entries.get(keyOf(owner));
      if (existing) return hold(existing);
      if (this.entries.size < this.options.maxPages) break;
      const idle = [...this.entries.values()]
        .filter((entry) => entry.busy === 0)
        .sort((a, b) => a.lastUsed - b.lastUsed)[0];
      if (idle) await this.closeEntry(idle);
      else await this.waitForChange(signal);
    }
    // A run gets a fresh key only outside a run: that page is its call's alone.
    const key = owner.runId === undefined ? `${owner.userId}/${randomUUID()}` : keyOf(owner);
    const opening: Omit<Entry, 'ready'> = {
      key,
      owner,
      run: undefined,
      queue: Promise.resolve(),
      busy: 1,
      lastUsed: Date.now(),
      idleTimer: undefined,
      isClosed: false,
    };
    const entry: Entry = Object.assign(opening, { ready: this.openContext(opening) });
    this.entries.set(key, entry);
    entry.ready.catch(() => void this.closeEntry(entry));
    return entry;
  }

  private async openContext(entry: Omit<Entry, 'ready'>): Promise<RunPage> {
    const browser = await this.launch();
    const session = this.options.proxy.openSession({ maxBytes: this.options.pageMaxBytes });
    try {
      const context = await browser.newContext({
        // Playwright adds <-loopback> to the context's bypass list: loopback goes through the
        // proxy too, where the guard refuses it.
        proxy: {
          server: this.options.proxy.url,
          username: session.username,
          password: session.password,
        },
        acceptDownloads: false,
        serviceWorkers: 'block',
        viewport: VIEWPORT,
      });
      const page = await context.newPage();
      // One page a run: a popup or a target=_blank link would be a page past maxPages, unseen by
      // the tools, so it is closed as it opens (its requests went through the proxy all the same).
      context.on('page', (opened) => {
        if (opened !== page) void opened.close().catch(() => {});
      });
      const run = {
        page,
        session,
        limits: {
          pageTimeoutMs: this.options.pageTimeoutMs,
          pageMaxBytes: this.options.pageMaxBytes,
        },
        discard: () => this.closeEntry(entry),
      };
      entry.run = run;
      // Closed while it opened: close what was just made.
      if (entry.isClosed) await closeContext(context, session);
      return run;
    } catch (error) {
      session.close();
      throw error;
    }
  }

  private async closeEntry(entry: Omit<Entry, 'ready'>): Promise<void> {
    if (entry.isClosed) return;
    entry.isClosed = true;
    clearTimeout(entry.idleTimer);
    if (this.entries.get(entry.key) === entry) this.entries.delete(entry.key);
    this.wake();
    if (entry.run) await closeContext(entry.run.page.context(), entry.run.session);
  }

  private launch(): Promise<Browser> {
    if (this.browser) return this.browser;
    const launching = this.launchBrowser();
    this.browser = launching;
    launching.then(
      (browser) =>
        browser.on('disconnected', () => {
          if (this.browser !== launching) return;
          // Chromium died (or was killed): its contexts went with it. The next call relaunches.
          this.browser = undefined;
          if (!this.isClosing)
            this.options.logger.warn('the browser exited; relaunching on next use');
          for (const entry of [...this.entries.values()]) void this.closeEntry(entry);
        }),
      () => {
        if (this.browser === launching) this.browser = undefined;
      },
    );
    return launching;
  }

  // A browser that cannot start (no Chromium, no user namespaces for its sandbox) is said so to
  // the model, and its reason logged for the operator, rather than an internal error.
  private async launchBrowser(): Promise<Browser> {
    try {
      return await this.startChromium();
    } catch (error) {
      this.options.logger.error({ err: error }, 'the browser could not start');
      const reason = error instanceof Error ? (error.message.split('\n')[0] ?? '') : String(error);
      throw new BusError('unavailable', `the browser could not start: ${reason}`);
    }
  }

  private async startChromium(): Promise<Browser> {
    const executablePath = await this.executable();
    return chromium.launch({
      executablePath,
      headless: true,
      // Never --no-sandbox: Playwright adds it unless told the sandbox is wanted.
      chromiumSandbox: true,
      // The browser-wide proxy is the guarded one too, without credentials (407 to anything):
      // a request outside every run's context still cannot leave unchecked.
      proxy: { server: this.options.proxy.url },
      args: CHROMIUM_ARGS,
      // Not the service's environment: it holds the database URL and the secret key.
      env: { PATH: SYSTEM_PATH },
    });
  }

  // Chromium itself when this process is not root; as root, a wrapper that hands Playwright's
  // profile directory to the browser's user and execs Chromium as that user (setpriv), so the
  // sandbox starts. The wrapper is written at launch because the user and binary are settings.
  private async executable(): Promise<string> {
    if (process.getuid?.() !== 0) return this.options.executablePath;
    const uid = Number(execFileSync('id', ['-u', this.options.user], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', this.options.user], { encoding: 'utf8' }).trim());
    if (uid === 0) throw new Error(`BROWSER_USER ${this.options.user} is root`);
    this.wrapperDir ??= await mkdtemp(join(tmpdir(), 'jarvis-browser-'));
    const wrapper = join(this.wrapperDir, 'chromium-as-user');
    await writeFile(
      wrapper,
      [
        '#!/bin/sh',
        'profile=',
        'for arg in "$@"; do',
        // biome-ignore lint/suspicious/noTemplateCurlyInString: a shell expansion, not a template
        '  case "$arg" in --user-data-dir=*) profile="${arg#--user-data-dir=}" ;; esac',
        'done',
        `[ -n "$profile" ] && chown -R ${uid}:${gid} "$profile"`,
        `exec setpriv --reuid=${uid} --regid=${gid} --clear-groups env HOME="$profile" ${shellQuote(this.options.executablePath)} "$@"`,
        '',
      ].join('\n'),
    );
    await chmod(wrapper, 0o700);
    return wrapper;
  }

  private wake(): void {
    for (const wake of this.waiters) wake();
    this.waiters.clear();
  }

  private waitForChange(signal: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        this.waiters.delete(done);
        reject(signal.reason);
      };
      const done = () => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      };
      this.waiters.add(done);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function hold(entry: Entry): Entry {
  entry.busy += 1;
  clearTimeout(entry.idleTimer);
  return entry;
}

function keyOf(owner: PageOwner): string {
  return `${owner.userId}/${owner.runId ?? ''}`;
}

async function closeContext(context: BrowserContext, session: ProxySession): Promise<void> {
  await context.close().catch(() => {});
  session.close();
}

function shellQuote(text: string): string {
  return `'${text.replaceAll("'", `'\\''`)}'`;
}
