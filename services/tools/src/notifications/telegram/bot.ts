import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { type OutboundGuard, OutboundRefusedError } from '@jarvis/net-guard';
import type { Logger } from '@jarvis/telemetry';
import { type Api, Bot, GrammyError, HttpError } from 'grammy';
import type { UserFromGetMe } from 'grammy/types';

// off: no TELEGRAM_BOT_TOKEN; refused: TELEGRAM_API_ROOT is an address the guard refuses;
// starting: getMe has not answered yet (Telegram unreachable); rejected: Telegram refused the
// token.
type TelegramBotState = 'off' | 'refused' | 'starting' | 'ready' | 'rejected';

const UNAVAILABLE: Record<Exclude<TelegramBotState, 'ready'>, string> = {
  off: 'this install has no Telegram bot (TELEGRAM_BOT_TOKEN is unset)',
  refused:
    'TELEGRAM_API_ROOT is a private or local address that OUTBOUND_ALLOWED_HOSTS does not name',
  starting: 'the Telegram bot is not ready yet: Telegram has not answered it',
  rejected: 'Telegram rejected the bot token (TELEGRAM_BOT_TOKEN)',
};

// The install's bot (TELEGRAM_BOT_TOKEN), shared by the link codes, the chat and the sender:
// every replica sends; only the elected one polls.
export type TelegramBot = {
  // undefined: the install has no bot, or its API root is refused.
  readonly bot: Bot | undefined;
  state(): TelegramBotState;
  // The bot as getMe told it; undefined until Telegram answered, or when it rejected the token.
  info(): UserFromGetMe | undefined;
  // Why there is no usable bot, for an `unavailable` answer; undefined once getMe answered.
  unavailableReason(): string | undefined;
  // Resolves once getMe answered (true) or Telegram rejected the token, or there is no token
  // (false); retries while Telegram cannot be reached.
  ready(): Promise<boolean>;
  stop(): void;
};

export type TelegramBotOptions = {
  token: string | undefined;
  // TELEGRAM_API_ROOT: Telegram's, a local Bot API server, or a test stand-in.
  apiRoot: string;
  guard: OutboundGuard;
  logger: Logger;
  // Between getMe attempts while Telegram cannot be reached.
  retryMs?: number;
};

// Every request to the Bot API connects through the address guard's checking lookup, like any
// other outbound request: grammY on Node fetches with node-fetch, which takes an http(s) Agent,
// and the agent's lookup is the guard's.
function guardedAgent(apiRoot: URL, guard: OutboundGuard): HttpAgent {
  const { lookup } = guard.connectOptions(apiRoot);
  return apiRoot.protocol === 'https:'
    ? new HttpsAgent({ keepAlive: true, lookup })
    : new HttpAgent({ keepAlive: true, lookup });
}

// A token Telegram refuses (401 Unauthorized, 404 for one that is malformed): retrying does not
// help, the operator must fix TELEGRAM_BOT_TOKEN.
export function isRejectedToken(error: unknown): boolean {
  return error instanceof GrammyError && (error.error_code === 401 || error.error_code === 404);
}

function withoutBot(state: 'off' | 'refused'): TelegramBot {
  return {
    bot: undefined,
    state: () => state,
    info: () => undefined,
    unavailableReason: () => UNAVAILABLE[state],
    ready: () => Promise.resolve(false),
    stop: () => {},
  };
}

export function createTelegramBot(options: TelegramBotOptions): TelegramBot {
  const { token, logger } = options;
  if (!token) return withoutBot('off');
  // grammY refuses a root that ends in a slash.
  const apiRoot = options.apiRoot.replace(/\/+$/, '');
  let agent: HttpAgent;
  try {
    agent = guardedAgent(new URL(apiRoot), options.guard);
  } catch (error) {
    // A setting to fix, which must not take web_fetch and the other channels down with it.
    if (!(error instanceof OutboundRefusedError)) throw error;
    logger.error({ reason: error.message }, 'TELEGRAM_API_ROOT refused: no Telegram channel');
    return withoutBot('refused');
  }
  const bot = new Bot(token, {
    // Longest one call may take; above getUpdates' long-polling wait (30 s). grammY's own default
    // (500 s) would let a stalled connection hold a poller that is being deposed.
    client: { apiRoot, baseFetchConfig: { agent }, timeoutSeconds: 60 },
  });
  const stopping = new AbortController();
  let state: TelegramBotState = 'starting';
  const retryMs = options.retryMs ?? 15_000;

  const init = async (): Promise<boolean> => {
    for (let attempt = 1; !stopping.signal.aborted; attempt++) {
      try {
        bot.botInfo = await bot.api.getMe(grammySignal(stopping.signal));
        state = 'ready';
        logger.info({ bot: bot.botInfo.username }, 'telegram bot ready');
        return true;
      } catch (error) {
        if (isRejectedToken(error)) {
          state = 'rejected';
          // The description only: the error's message and payload would name the URL, and the
          // URL holds the token.
          logger.error(
            { description: error instanceof GrammyError ? error.description : undefined },
            'Telegram rejected TELEGRAM_BOT_TOKEN: no Telegram channel until it is fixed',
          );
          return false;
        }
        if (attempt === 1) {
          logger.warn({ reason: describeTelegramError(error) }, 'telegram unreachable; retrying');
        }
        await sleep(retryMs, stopping.signal);
      }
    }
    return false;
  };
  const isReady = init();

  return {
    bot,
    state: () => state,
    info: () => (state === 'ready' ? bot.botInfo : undefined),
    unavailableReason: () => (state === 'ready' ? undefined : UNAVAILABLE[state]),
    ready: () => isReady,
    stop: () => stopping.abort(),
  };
}

// grammY's Node typings name the abort-controller package's AbortSignal, which Node's own does
// not match in type; node-fetch takes Node's at run time (it checks the object's class name).
type GrammySignal = Parameters<Api['getMe']>[0];
export function grammySignal(signal: AbortSignal): GrammySignal;
export function grammySignal(signal: AbortSignal | undefined): GrammySignal | undefined;
export function grammySignal(signal: AbortSignal | undefined): GrammySignal | undefined {
  return signal as GrammySignal | undefined;
}

// What went wrong with a call, without the token. A GrammyError carries Telegram's description;
// grammY's HttpError names the method only, and the fetch error inside it starts with the URL,
// which holds the token: only its reason (a refused connection, the guard's refusal) is kept.
export function describeTelegramError(error: unknown): string {
  if (error instanceof GrammyError) return `${error.error_code}: ${error.description}`;
  if (error instanceof HttpError) {
    const inner = error.error instanceof Error ? error.error.message : '';
    const reason = inner.includes('reason: ') ? inner.slice(inner.indexOf('reason: ') + 8) : '';
    return reason ? `${error.message} ${reason}` : error.message;
  }
  if (error instanceof Error && error.name === 'AbortError') return 'the request was aborted';
  return 'the request failed';
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        resolve();
      },
      { once: true },
    );
  });
}
