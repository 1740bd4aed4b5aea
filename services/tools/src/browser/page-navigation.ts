import { BusError, isBusError } from '@jarvis/bus';
import { type OutboundGuard, OutboundRefusedError } from '@jarvis/net-guard';
import type { Page, Response } from 'playwright-core';
import { htmlToText } from '../web/html-to-text';
import type { RunPage } from './browser-pool';

// Links a page read returns at most, and the characters of each one's text: with the text they
// stay within the orchestrator's cap on a tool result.
const MAX_LINKS = 20;
const LINK_TEXT_MAX_CHARS = 80;
// Characters of all links' texts and URLs together; a link past it is left out.
const LINKS_MAX_CHARS = 2_000;

type PageLink = { text: string; url: string };
export type PageReading = {
  url: string;
  status: number | undefined;
  title: string | undefined;
  text: string;
  truncated: boolean;
  links: PageLink[];
};

// A URL the browser may be asked to open: http(s), and not an address the guard refuses as
// written (a name is checked by the proxy when Chromium connects, at every hop).
export function parseBrowserUrl(text: string, guard: OutboundGuard): URL {
  const url = URL.canParse(text) ? new URL(text) : undefined;
  if (!url) throw new BusError('bad_request', `url: ${text} is not an absolute URL`);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new BusError(
      'bad_request',
      `url: the browser opens http and https URLs, not ${url.protocol}`,
    );
  }
  try {
    guard.connectOptions(url);
  } catch (error) {
    if (error instanceof OutboundRefusedError) throw refusal(error.message);
    throw error;
  }
  return url;
}

// Opens `url` in the run's page and waits for its load event. Every failure comes back in words
// the model can act on: refused, too big, too slow, a download, or the page's own error.
export async function navigate(run: RunPage, url: URL): Promise<number | undefined> {
  const { page, session, limits } = run;
  session.resetBytes();
  const refusedBefore = session.refusals().length;
  let isDownload = false;
  const onDownload = () => {
    isDownload = true;
  };
  page.on('download', onDownload);
  try {
    const response = await page.goto(url.href, {
      waitUntil: 'load',
      timeout: limits.pageTimeoutMs,
    });
    const refused = await refusalOfPage(response, session.refusals().slice(refusedBefore));
    if (refused) throw refusal(refused.message);
    if (isOverLimit(run)) throw await tooBig(run, url);
    if (isDownload) throw downloadRefused(url);
    return response?.status();
  } catch (error) {
    if (isBusError(error)) throw error;
    const refused = session.refusals().slice(refusedBefore);
    const message = error instanceof Error ? error.message : String(error);
    if (isDownload || message.includes('Download is starting')) throw downloadRefused(url);
    if (isOverLimit(run)) throw await tooBig(run, url);
    // The proxy refused the page's own connection (a CONNECT answered 403 fails the navigation).
    const first = refused.find((each) => sameHost(each.host, url.hostname)) ?? refused[0];
    if (first && /ERR_TUNNEL_CONNECTION_FAILED|ERR_PROXY|ERR_ABORTED|ERR_EMPTY/.test(message)) {
      throw refusal(first.message);
    }
    // The page's fault, not the service's: a 4xx (the bad input), so that a caller does
    // not take it for a slow service and try again.
    if (error instanceof Error && error.name === 'TimeoutError') {
      throw new BusError(
        'bad_request',
        `${url.href} did not finish loading within ${limits.pageTimeoutMs / 1_000} s`,
      );
    }
    if (page.isClosed())
      throw new BusError('timeout', `${url.href} was closed: the call's time was up`);
    throw new BusError('unavailable', `could not load ${url.href}: ${firstLine(message)}`);
  } finally {
    page.off('download', onDownload);
  }
}

// The page as a reader sees it after its scripts ran: title, readable text of the rendered DOM
// (the same conversion web_fetch uses), and its links.
export async function readPage(page: Page, maxChars: number): Promise<Omit<PageReading, 'status'>> {
  const html = await page.content();
  const { title, text } = htmlToText(html);
  // Raw href attributes, made absolute here against the page's address.
  const hrefs = await page.$$eval('a[href]', (anchors) =>
    anchors.map((anchor) => ({
      text: (anchor.textContent ?? '').replace(/\s+/g, ' ').trim(),
      href: anchor.getAttribute('href') ?? '',
    })),
  );
  const links: PageLink[] = [];
  let linkChars = 0;
  for (const { text: linkText, href } of hrefs) {
    const url = URL.canParse(href, page.url()) ? new URL(href, page.url()) : undefined;
    if (url?.protocol !== 'http:' && url?.protocol !== 'https:') continue;
    const link = { text: linkText.slice(0, LINK_TEXT_MAX_CHARS), url: url.href };
    linkChars += link.text.length + link.url.length;
    if (linkChars > LINKS_MAX_CHARS || links.length === MAX_LINKS) break;
    links.push(link);
  }
  return {
    url: page.url(),
    title: title ?? ((await page.title()) || undefined),
    text: text.slice(0, maxChars),
    truncated: text.length > maxChars,
    links,
  };
}

// Says "refused" first, as web_fetch does, so the model reads it as a refusal, not a page that
// failed to load.
function refusal(reason: string): BusError {
  return new BusError(
    'forbidden',
    `refused to connect: ${reason}; the browser reaches the public internet, and private hosts only where OUTBOUND_ALLOWED_HOSTS names them`,
  );
}

// A plain-http navigation the proxy refused still "loads": Chromium shows the proxy's 403 as the
// page. It is the proxy's when its text is that of a connection it refused during this load (a
// refused subresource on the same host, which the page survives, is not the page).
async function refusalOfPage(
  response: Response | null,
  refused: OutboundRefusedError[],
): Promise<OutboundRefusedError | undefined> {
  if (refused.length === 0 || response?.status() !== 403) return undefined;
  const text = await response.text().catch(() => '');
  return refused.find((each) => text === `refused to connect: ${each.message}`);
}

function sameHost(a: string, b: string): boolean {
  const bare = (host: string) =>
    host
      .replace(/^\[(.*)\]$/, '$1')
      .toLowerCase()
      .replace(/\.$/, '');
  return bare(a) === bare(b);
}

// Past the byte limit: the proxy cut the page's connections (or refused an answer whose length
// said it would be), and Chromium shows the proxy's 403, or waits for a load that never comes.
function isOverLimit({ session, limits }: RunPage): boolean {
  return session.isOverLimit() || session.bytesReceived() > limits.pageMaxBytes;
}

// The proxy has cut the session off; the page goes with it, so the run's next call starts clean.
async function tooBig(run: RunPage, url: URL): Promise<BusError> {
  const maxBytes = run.limits.pageMaxBytes;
  await run.discard();
  return new BusError(
    'payload_too_large',
    `${url.href} received more than ${Math.round(maxBytes / 1_000_000)} MB; the browser stops a page past that`,
  );
}

function downloadRefused(url: URL): BusError {
  return new BusError(
    'bad_request',
    `${url.href} started a file download; the browser does not download files (web_fetch reads text files)`,
  );
}

function firstLine(text: string): string {
  return text.split('\n')[0] ?? text;
}
