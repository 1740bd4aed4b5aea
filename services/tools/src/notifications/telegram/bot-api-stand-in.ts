import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Update } from 'grammy/types';

// A local HTTP server in place of Telegram's Bot API, for tests: it speaks the Bot API's wire
// format (POST /bot<token>/<method>, JSON in, {ok, result} or {ok: false, error_code,
// description, parameters} out), keeps every request it was sent, and serves getUpdates from
// updates the test pushes, with long polling and Telegram's 409 for a second concurrent caller.

type BotApiRequest = { method: string; token: string; body: Record<string, unknown> };

type BotApiFailure = {
  status: number;
  description: string;
  parameters?: Record<string, unknown>;
};

export type BotApiStandIn = {
  // TELEGRAM_API_ROOT for the bot under test.
  url: string;
  requests: BotApiRequest[];
  // Requests of one method, in order.
  calls(method: string): Record<string, unknown>[];
  // The message_id a sendMessage request (one of calls('sendMessage')) was answered with.
  messageIdOf(body: Record<string, unknown>): number | undefined;
  // Queues an update for getUpdates, with the next update_id or the one given (an update
  // Telegram delivers again).
  pushUpdate(update: Omit<Update, 'update_id'>, updateId?: number): number;
  // The next `count` calls of the method fail with this answer.
  failNext(method: string, failure: BotApiFailure, count?: number): void;
  // getUpdates answered 409 because another one was pending.
  conflicts(): number;
  // Waits until a request of the method matches.
  waitForCall(
    method: string,
    match?: (body: Record<string, unknown>) => boolean,
    timeoutMs?: number,
  ): Promise<Record<string, unknown>>;
  close(): Promise<void>;
};

export const STAND_IN_BOT = {
  id: 7_000_001,
  is_bot: true as const,
  first_name: 'Jarvis',
  username: 'jarvis_test_bot',
  can_join_groups: true,
  can_read_all_group_messages: false,
  supports_inline_queries: false,
  can_connect_to_business: false,
  has_main_web_app: false,
};

export async function startBotApiStandIn(token: string): Promise<BotApiStandIn> {
  const requests: BotApiRequest[] = [];
  const updates: Update[] = [];
  const again = new Set<Update>();
  const edited = new Map<string, unknown>();
  const sentIds = new Map<Record<string, unknown>, number>();
  const failures = new Map<string, BotApiFailure[]>();
  const waiters = new Set<() => void>();
  let nextUpdateId = 1;
  let nextMessageId = 1;
  let pendingPolls = 0;
  let conflictCount = 0;
  const wake = () => {
    for (const waiter of [...waiters]) waiter();
  };

  const answer = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, failure: BotApiFailure) =>
    answer(res, failure.status, {
      ok: false,
      error_code: failure.status,
      description: failure.description,
      ...(failure.parameters ? { parameters: failure.parameters } : {}),
    });

  const pollUpdates = async (res: ServerResponse, body: Record<string, unknown>) => {
    const offset = typeof body.offset === 'number' ? body.offset : 0;
    // Telegram forgets what an offset confirms; an update pushed again with its old id is served
    // once more whatever the offset, as Telegram does for a poller that never confirmed it.
    const kept = updates.filter((update) => update.update_id >= offset || again.has(update));
    updates.splice(0, updates.length, ...kept);
    const timeoutS = typeof body.timeout === 'number' ? body.timeout : 0;
    const deadline = Date.now() + timeoutS * 1_000;
    // A poller that went away (bot.stop aborts its getUpdates) closes the response.
    while (updates.length === 0 && Date.now() < deadline && !res.destroyed) {
      await new Promise<void>((resolve) => {
        const done = () => {
          waiters.delete(done);
          clearTimeout(timer);
          res.off('close', done);
          resolve();
        };
        const timer = setTimeout(done, Math.max(deadline - Date.now(), 0));
        waiters.add(done);
        res.once('close', done);
      });
    }
    const limit = typeof body.limit === 'number' ? body.limit : 100;
    const served = updates.slice(0, limit);
    for (const update of served) again.delete(update);
    return served;
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const match = /^\/bot([^/]+)\/(\w+)$/.exec(req.url ?? '');
    if (!match || req.method !== 'POST') {
      answer(res, 404, { ok: false, error_code: 404, description: 'Not Found' });
      return;
    }
    const [, requestToken = '', method = ''] = match;
    const text = Buffer.concat(chunks).toString('utf8');
    const body: Record<string, unknown> = text ? JSON.parse(text) : {};
    requests.push({ method, token: requestToken, body });
    wake();
    if (requestToken !== token) {
      answer(res, 401, { ok: false, error_code: 401, description: 'Unauthorized' });
      return;
    }
    const failure = failures.get(method)?.shift();
    if (failure) {
      fail(res, failure);
      return;
    }
    switch (method) {
      case 'getMe':
        answer(res, 200, { ok: true, result: STAND_IN_BOT });
        return;
      case 'deleteWebhook':
      case 'answerCallbackQuery':
      case 'sendChatAction':
        answer(res, 200, { ok: true, result: true });
        return;
      case 'getUpdates': {
        if (pendingPolls > 0) {
          conflictCount += 1;
          fail(res, {
            status: 409,
            description: 'Conflict: terminated by other getUpdates request',
          });
          return;
        }
        pendingPolls += 1;
        try {
          const result = await pollUpdates(res, body);
          if (!res.destroyed) answer(res, 200, { ok: true, result });
        } finally {
          pendingPolls -= 1;
        }
        return;
      }
      case 'editMessageText': {
        // Telegram refuses an edit that changes nothing.
        const key = `${String(body.chat_id)}:${String(body.message_id)}`;
        if (edited.get(key) === body.text) {
          fail(res, { status: 400, description: 'Bad Request: message is not modified' });
          return;
        }
        edited.set(key, body.text);
        answer(res, 200, {
          ok: true,
          result: {
            message_id: body.message_id,
            date: Math.floor(Date.now() / 1_000),
            chat: { id: Number(body.chat_id), type: 'private' },
            text: body.text,
          },
        });
        return;
      }
      case 'sendMessage': {
        const messageId = nextMessageId++;
        sentIds.set(body, messageId);
        answer(res, 200, {
          ok: true,
          result: {
            message_id: messageId,
            date: Math.floor(Date.now() / 1_000),
            chat: { id: Number(body.chat_id), type: 'private' },
            text: body.text,
          },
        });
        return;
      }
      default:
        answer(res, 400, { ok: false, error_code: 400, description: `no method ${method} here` });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  const calls = (method: string) =>
    requests.filter((request) => request.method === method).map((request) => request.body);

  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    calls,
    messageIdOf: (body) => sentIds.get(body),
    pushUpdate(update, updateId) {
      const id = updateId ?? nextUpdateId++;
      const queued = { ...update, update_id: id };
      if (updateId !== undefined) again.add(queued);
      updates.push(queued);
      wake();
      return id;
    },
    failNext(method, failure, count = 1) {
      failures.set(method, [
        ...(failures.get(method) ?? []),
        ...Array.from({ length: count }, () => failure),
      ]);
    },
    conflicts: () => conflictCount,
    waitForCall(method, match = () => true, timeoutMs = 15_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = calls(method).find(match);
          if (!found) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`no ${method} call in ${timeoutMs} ms`));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async close() {
      wake();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
