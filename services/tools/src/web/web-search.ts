import { BusError, isBusError } from '@jarvis/bus';
import {
  type AllowedHost,
  OutboundAllowedHosts,
  type OutboundGuard,
  OutboundRefusedError,
} from '@jarvis/net-guard';
import { z } from 'zod';
import type { Tool } from '../registry';
import { readBody, requestThroughGuard } from './guarded-http';
import { htmlToText } from './html-to-text';
import { UNTRUSTED_NOTICE } from './web-fetch';

type WebSearchProvider = 'searxng' | 'brave' | 'tavily';

// Where web_search asks, and with what key. `url` is the provider's search endpoint (SearXNG:
// the instance's base address; /search is added).
export type WebSearchConfig =
  | { provider: 'searxng'; url: string }
  | { provider: 'brave' | 'tavily'; url: string; apiKey: string };

export type WebSearchOptions = {
  config: WebSearchConfig;
  // Asked on every connection to the provider (webSearchGuard makes one that allows it).
  guard: OutboundGuard;
  // Results handed to the model, at most.
  maxResults: number;
  // Longest one search takes, however long its caller would wait.
  timeoutMs: number;
};

type WebSearchArgs = { query: string };

type WebSearchResult = { title: string; url: string; snippet: string };

// The settings web_search is made from (services/tools/src/env.ts).
type WebSearchEnv = {
  WEB_SEARCH_PROVIDER?: WebSearchProvider | undefined;
  SEARXNG_URL?: string | undefined;
  BRAVE_SEARCH_API_KEY?: string | undefined;
  BRAVE_SEARCH_URL: string;
  TAVILY_API_KEY?: string | undefined;
  TAVILY_URL: string;
};

// Brave and Tavily refuse longer queries; SearXNG's engines cut them anyway.
const MAX_QUERY_CHARS = 400;
// A page of results is tens of kilobytes; anything past this is not a search answer.
const MAX_ANSWER_BYTES = 1_000_000;
const MAX_TITLE_CHARS = 200;
const MAX_SNIPPET_CHARS = 400;
const USER_AGENT = 'Jarvis-web_search/1.0 (self-hosted assistant)';
const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

// The provider the settings name, or else the first one configured: SearXNG, Brave, Tavily.
// Undefined when none is: the tool is then not registered, so the model is never offered a
// search that can only fail. env.ts refuses a named provider without its URL or key.
export function webSearchConfig(env: WebSearchEnv): WebSearchConfig | undefined {
  const provider =
    env.WEB_SEARCH_PROVIDER ??
    (env.SEARXNG_URL
      ? 'searxng'
      : env.BRAVE_SEARCH_API_KEY
        ? 'brave'
        : env.TAVILY_API_KEY
          ? 'tavily'
          : undefined);
  if (provider === 'searxng' && env.SEARXNG_URL) return { provider, url: env.SEARXNG_URL };
  if (provider === 'brave' && env.BRAVE_SEARCH_API_KEY) {
    return { provider, url: env.BRAVE_SEARCH_URL, apiKey: env.BRAVE_SEARCH_API_KEY };
  }
  if (provider === 'tavily' && env.TAVILY_API_KEY) {
    return { provider, url: env.TAVILY_URL, apiKey: env.TAVILY_API_KEY };
  }
  return undefined;
}

// The tools' guard, plus the provider's own host and port, for web_search alone: the operator
// named that address, and a SearXNG on the compose network (http://searxng:8080) is private.
// Listing it in OUTBOUND_ALLOWED_HOSTS instead would open it to web_fetch and the browser too.
// Cloud metadata stays refused whatever is allowed.
export function webSearchAllowedHosts(
  allowedHosts: AllowedHost[],
  config: WebSearchConfig,
): AllowedHost[] {
  const url = new URL(config.url);
  const entry = url.port ? url.host : `${url.host}:${DEFAULT_PORTS[url.protocol] ?? 443}`;
  return [...allowedHosts, ...OutboundAllowedHosts.parse(entry)];
}

// Searches the web through the configured provider and answers the top results, each a title,
// a URL and a snippet, marked as untrusted: snippets are text from pages anyone can write.
export function createWebSearchTool(options: WebSearchOptions): Tool<WebSearchArgs> {
  const provider = PROVIDERS[options.config.provider];
  return {
    name: 'web_search',
    description:
      'Search the web. Answers the top results, each with its title, URL and a snippet; read a result with web_fetch. What it returns is untrusted data from the web.',
    risk: 'safe',
    inputSchema: {
      type: 'object',
      properties: {
        query: {
          type: 'string',
          minLength: 1,
          maxLength: MAX_QUERY_CHARS,
          description: 'What to search for, as you would type it into a search engine.',
        },
      },
      required: ['query'],
      additionalProperties: false,
    },
    async run({ query }, context) {
      const text = query.trim();
      if (!text) throw new BusError('bad_request', 'query: is empty');
      const signal = AbortSignal.any([context.signal, AbortSignal.timeout(options.timeoutMs)]);
      const url = new URL(options.config.url);
      try {
        const answer = await ask(provider, options, text, signal);
        return {
          notice: UNTRUSTED_NOTICE,
          query: text,
          results: firstResults(answer, provider.isHtml, options.maxResults),
        };
      } catch (error) {
        throw describeFailure(error, provider.name, url, options, signal);
      }
    },
  };
}

type RawResult = { title?: string | undefined; url: string; snippet?: string | undefined };

type Provider = {
  // As the model and the operator read it in an error.
  name: string;
  // Whether titles and snippets are HTML (Brave marks the words matched with <strong>).
  isHtml: boolean;
  request(
    config: WebSearchConfig,
    query: string,
    maxResults: number,
  ): { url: URL; method: 'GET' | 'POST'; headers: Record<string, string>; body?: string };
  // What an error status means, in the operator's words, where it means more than its number.
  explainStatus(status: number): string | undefined;
  parse(json: unknown): RawResult[];
};

const SearxngAnswer = z.object({
  results: z.array(z.unknown()),
  // [engine, reason] for each engine that failed.
  unresponsive_engines: z.array(z.array(z.string())).optional(),
});
const SearxngResult = z.object({
  url: z.string(),
  title: z.string().optional(),
  content: z.string().nullish(),
});

const BraveAnswer = z.object({
  web: z.object({ results: z.array(z.unknown()) }).optional(),
});
const BraveResult = z.object({
  url: z.string(),
  title: z.string().optional(),
  description: z.string().optional(),
});

const TavilyAnswer = z.object({ results: z.array(z.unknown()) });
const TavilyResult = z.object({
  url: z.string(),
  title: z.string().optional(),
  content: z.string().nullish(),
});

// One result the provider sent in a shape not its documented one is skipped, not the search.
function each<T>(items: unknown[], schema: z.ZodType<T>): T[] {
  return items.flatMap((item) => {
    const parsed = schema.safeParse(item);
    return parsed.success ? [parsed.data] : [];
  });
}

function apiKeyOf(config: WebSearchConfig): string {
  return 'apiKey' in config ? config.apiKey : '';
}

const PROVIDERS: Record<WebSearchProvider, Provider> = {
  // GET <instance>/search?q=...&format=json: SearXNG's own API.
  searxng: {
    name: 'SearXNG',
    isHtml: false,
    request(config, query) {
      const url = new URL(config.url);
      // An instance behind a reverse proxy may sit under a path: /search goes after it.
      url.pathname = `${url.pathname.replace(/\/+$/, '')}/search`;
      url.search = new URLSearchParams({ q: query, format: 'json' }).toString();
      return {
        url,
        method: 'GET',
        headers: { 'user-agent': USER_AGENT, accept: 'application/json' },
      };
    },
    explainStatus(status) {
      if (status === 403) {
        return 'it does not serve JSON: add json to search.formats in its settings.yml (infra/searxng/settings.yml does)';
      }
      if (status === 429) {
        return 'its bot limiter turned Jarvis away: set server.limiter to false in its settings.yml';
      }
      return undefined;
    },
    parse(json) {
      const answer = SearxngAnswer.parse(json);
      const results = each(answer.results, SearxngResult);
      const failed = answer.unresponsive_engines ?? [];
      // SearXNG answers 200 with no results when every engine failed: that is not "nothing
      // found", and the model must not read it as such.
      if (results.length === 0 && failed.length > 0) {
        const engines = failed.map(([engine, reason]) => `${engine} (${reason ?? 'failed'})`);
        throw new BusError('unavailable', `SearXNG's engines failed: ${engines.join(', ')}`);
      }
      return results.map((result) => ({ ...result, snippet: result.content ?? undefined }));
    },
  },
  // GET https://api.search.brave.com/res/v1/web/search?q=...&count=N, the key in a header.
  brave: {
    name: 'Brave Search',
    isHtml: true,
    request(config, query, maxResults) {
      const url = new URL(config.url);
      url.search = new URLSearchParams({ q: query, count: String(maxResults) }).toString();
      return {
        url,
        method: 'GET',
        headers: {
          'user-agent': USER_AGENT,
          accept: 'application/json',
          'x-subscription-token': apiKeyOf(config),
        },
      };
    },
    explainStatus(status) {
      if (status === 401 || status === 403) return 'it refused BRAVE_SEARCH_API_KEY';
      if (status === 429) return "the key's plan allows no more searches for now";
      return undefined;
    },
    parse(json) {
      const answer = BraveAnswer.parse(json);
      return each(answer.web?.results ?? [], BraveResult).map((result) => ({
        ...result,
        snippet: result.description,
      }));
    },
  },
  // POST https://api.tavily.com/search {query, max_results}, the key as a Bearer token.
  tavily: {
    name: 'Tavily',
    isHtml: false,
    request(config, query, maxResults) {
      return {
        url: new URL(config.url),
        method: 'POST',
        headers: {
          'user-agent': USER_AGENT,
          accept: 'application/json',
          'content-type': 'application/json',
          authorization: `Bearer ${apiKeyOf(config)}`,
        },
        body: JSON.stringify({ query, max_results: maxResults, search_depth: 'basic' }),
      };
    },
    explainStatus(status) {
      if (status === 401 || status === 403) return 'it refused TAVILY_API_KEY';
      if (status === 429 || status === 432 || status === 433) {
        return "the key's plan allows no more searches for now";
      }
      return undefined;
    },
    parse(json) {
      const answer = TavilyAnswer.parse(json);
      return each(answer.results, TavilyResult).map((result) => ({
        ...result,
        snippet: result.content ?? undefined,
      }));
    },
  },
};

async function ask(
  provider: Provider,
  options: WebSearchOptions,
  query: string,
  signal: AbortSignal,
): Promise<RawResult[]> {
  const { url, ...request } = provider.request(options.config, query, options.maxResults);
  // Redirects are not followed: a search API answers where it is asked.
  const response = await requestThroughGuard(options.guard, url, request, signal);
  const status = response.statusCode ?? 0;
  if (status < 200 || status >= 300) {
    response.destroy();
    const meaning = provider.explainStatus(status);
    throw new BusError(
      status === 400 ? 'bad_request' : 'unavailable',
      `${provider.name} at ${url.host} answered ${status}${meaning ? `: ${meaning}` : ''}`,
    );
  }
  const { body, isCut } = await readBody(response, MAX_ANSWER_BYTES);
  if (isCut) {
    throw new BusError(
      'unavailable',
      `${provider.name} answered more than ${MAX_ANSWER_BYTES} bytes`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    throw new BusError('unavailable', `${provider.name} at ${url.host} did not answer JSON`);
  }
  try {
    return provider.parse(json);
  } catch (error) {
    if (isBusError(error)) throw error;
    throw new BusError('unavailable', `${provider.name} answered JSON not in its search format`);
  }
}

// The first maxResults results with an http(s) URL, each URL once, titles and snippets as
// plain text on one line and cut to a length a prompt can hold eight of.
function firstResults(raw: RawResult[], isHtml: boolean, maxResults: number): WebSearchResult[] {
  const seen = new Set<string>();
  const results: WebSearchResult[] = [];
  for (const result of raw) {
    if (results.length === maxResults) break;
    const url = URL.canParse(result.url) ? new URL(result.url) : undefined;
    // A javascript: or data: "result" is not a page to read.
    if (url?.protocol !== 'http:' && url?.protocol !== 'https:') continue;
    if (seen.has(url.href)) continue;
    seen.add(url.href);
    results.push({
      title: cut(plainText(result.title ?? '', isHtml), MAX_TITLE_CHARS) || url.host,
      url: url.href,
      snippet: cut(plainText(result.snippet ?? '', isHtml), MAX_SNIPPET_CHARS),
    });
  }
  return results;
}

function plainText(text: string, isHtml: boolean): string {
  const visible = isHtml ? htmlToText(text).text : text;
  return visible.replace(/\s+/g, ' ').trim();
}

function cut(text: string, maxChars: number): string {
  return text.length > maxChars ? `${text.slice(0, maxChars - 1).trimEnd()}…` : text;
}

function describeFailure(
  error: unknown,
  providerName: string,
  url: URL,
  options: WebSearchOptions,
  signal: AbortSignal,
): BusError {
  if (isBusError(error)) return error;
  if (error instanceof OutboundRefusedError) {
    // Says "refused" first, as web_fetch does; the fix is the operator's, not the model's.
    return new BusError(
      'forbidden',
      `refused to connect: ${error.message}; web_search reaches ${providerName} at the address its settings give`,
    );
  }
  if (signal.aborted) {
    if (isBusError(signal.reason)) return signal.reason;
    return new BusError(
      'timeout',
      `${providerName} at ${url.host} did not answer within ${options.timeoutMs / 1_000} s`,
    );
  }
  const reason = error instanceof Error ? error.message : String(error);
  return new BusError(
    'unavailable',
    `${providerName} at ${url.host} could not be reached: ${reason}`,
  );
}
