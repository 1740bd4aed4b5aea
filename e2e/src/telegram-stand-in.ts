import { type HttpRecorder, startHttpRecorder } from '@jarvis/testkit';

export const STAND_IN_BOT_USERNAME = 'jarvis_test_bot';

export type TelegramStandIn = {
  // TELEGRAM_API_ROOT for the stack.
  url: string;
  recorder: HttpRecorder;
  // What the bot sent (sendMessage's body), with the message_id it was answered with.
  sent: { messageId: number; body: Record<string, unknown> }[];
  // A message to the bot, as getUpdates will serve it.
  sendToBot(message: Record<string, unknown>): void;
  close(): Promise<void>;
};

// Telegram's Bot API as far as the whole stack needs it, on loopback: who the bot is, getUpdates
// (held a moment when there is nothing, as a long poll is) serving the messages a test sends as
// a user, and an answer to anything the bot says.
export async function startTelegramStandIn(): Promise<TelegramStandIn> {
  const recorder = await startHttpRecorder();
  const updates: { update_id: number; message: Record<string, unknown> }[] = [];
  const sent: TelegramStandIn['sent'] = [];
  recorder.respondWith((request, response) => {
    const answer = (result: unknown) =>
      response
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ ok: true, result }));
    const method = request.path.split('/').at(-1);
    const body = (request.body ? JSON.parse(request.body) : {}) as Record<string, unknown> & {
      offset?: number;
      chat_id?: number;
    };
    if (method === 'getMe') {
      answer({
        id: 7_000_001,
        is_bot: true,
        first_name: 'Jarvis',
        username: STAND_IN_BOT_USERNAME,
      });
    } else if (method === 'getUpdates') {
      const due = updates.filter((update) => update.update_id >= (body.offset ?? 0));
      if (due.length > 0) answer(due);
      else setTimeout(() => answer([]), 300);
    } else if (method === 'sendMessage') {
      const messageId = sent.length + 1;
      sent.push({ messageId, body });
      answer({
        message_id: messageId,
        date: Math.floor(Date.now() / 1_000),
        chat: { id: body.chat_id, type: 'private' },
        text: '',
      });
    } else {
      answer(true);
    }
  });
  return {
    url: recorder.url,
    recorder,
    sent,
    sendToBot(message) {
      updates.push({ update_id: updates.length + 1, message });
    },
    close: () => recorder.close(),
  };
}
