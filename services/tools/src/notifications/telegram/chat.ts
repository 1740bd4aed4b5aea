import { awaitTurnOutcome, type Bus, isBusError } from '@jarvis/bus';
import {
  type ApprovalStatus,
  orchestratorApprovalsDecide,
  orchestratorApprovalsGet,
  orchestratorMissionsAnswer,
  turnSubmit,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { type AdmitRate, type UserRateLimits, userRateWindows } from '@jarvis/service-kit';
import type { Logger } from '@jarvis/telemetry';
import { type Api, type Bot, type Context, GrammyError } from 'grammy';
import type { Redis } from 'ioredis';
import { v5 as uuidv5 } from 'uuid';
import { findTelegramLinkByChat } from '../channels-repository';
import { cut } from '../pipeline/map-event';
import { getSettings } from '../settings-repository';
import { redeemLinkCode } from './link-codes';
import { findQuestionMessage, type QuestionMessage } from './question-messages-repository';
import { sendText } from './send-text';
import { escapeHtml } from './telegram-html';

export type ChatDeps = {
  bus: Bus;
  pool: Pool;
  redis: Redis;
  logger: Logger;
  // The NATS namespace: the prefix of the rate limits' and link attempts' Redis keys.
  namespace: string;
  admitRate: AdmitRate;
  // The same limits as POST /v1/chat (RATE_LIMIT_PER_MINUTE, CHAT_RATE_LIMIT_PER_MINUTE).
  limits: UserRateLimits;
  // The gateway's SERVICE_TIMEOUT_MS and TURN_TIMEOUT_MS.
  submitTimeoutMs: number;
  turnTimeoutMs: number;
  // Work that outlives the update's handler (a turn's wait for its reply): the service's stop
  // lets it finish for a while.
  track: (work: Promise<void>) => void;
};

// Names Telegram turns' ids (UUID version 5): any fixed UUID serves, and changing it would make
// an update Telegram delivers again a second turn.
const TELEGRAM_TURN_NAMESPACE = '0b5f3a52-0e6c-4d55-9f0b-8f7f6c1a9e24';

const NOT_LINKED =
  'This chat is not linked to Jarvis. Get a code under Settings → Notifications and send /start CODE here.';
const PRIVATE_ONLY = 'Jarvis talks in private chats only: message the bot directly.';
const NOT_YOURS = "Only this chat's own user can talk to Jarvis here.";

const DECISION_DATA =
  /^(approve|deny):([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

const STATUS_LABELS: Record<ApprovalStatus, string> = {
  pending: 'Waiting for your decision',
  approved: 'Approved',
  denied: 'Denied',
  expired: 'Expired',
};

// The bot's answers to the updates it polls: /start CODE links a private chat; a linked chat's
// messages become turns in its user's persistent conversation, and their replies come back; a
// reply to a mission's question answers that question; an approval's buttons decide it. Every update's sender is checked against the chat: in a private
// chat they are the same user, and nothing else is served.
export function installChatHandlers(bot: Bot, deps: ChatDeps): void {
  bot.on('callback_query:data', (ctx) => decideFromButton(ctx, deps));
  bot.on('message', (ctx) => answerMessage(ctx, deps));
  bot.catch((error) => {
    deps.logger.error(
      { update: error.ctx.update.update_id, err: error.error },
      'telegram update failed',
    );
  });
}

async function answerMessage(ctx: Context, deps: ChatDeps): Promise<void> {
  const { chat, from, message } = ctx;
  if (!chat || !message) return;
  if (chat.type !== 'private') {
    await ctx.reply(PRIVATE_ONLY);
    return;
  }
  if (!from || from.id !== chat.id) {
    await ctx.reply(NOT_YOURS);
    return;
  }
  const chatId = String(chat.id);
  const text = message.text ?? '';
  const start = /^\/start(?:@\w+)?(?:\s+(\S+))?\s*$/.exec(text);
  if (start?.[1]) {
    await linkChat(ctx, deps, chatId, start[1]);
    return;
  }
  const link = await findTelegramLinkByChat(deps.pool, chatId);
  if (!link) {
    await ctx.reply(NOT_LINKED);
    return;
  }
  if (start) {
    await ctx.reply('This chat is linked to Jarvis: send a message to talk.');
    return;
  }
  if (!message.text) {
    await ctx.reply('Jarvis reads text messages only.');
    return;
  }
  const repliedTo = message.reply_to_message?.message_id;
  const question =
    repliedTo === undefined
      ? undefined
      : await findQuestionMessage(deps.pool, link.userId, chatId, repliedTo);
  if (question) {
    await answerQuestion(ctx, deps, question, message.text);
    return;
  }
  await startTurn(ctx, deps, link.userId, chatId, message.text);
}

async function linkChat(ctx: Context, deps: ChatDeps, chatId: string, code: string) {
  const outcome = await redeemLinkCode(
    { pool: deps.pool, redis: deps.redis, namespace: deps.namespace },
    { chatId, username: ctx.from?.username ?? null },
    code,
  );
  switch (outcome.status) {
    case 'linked':
      deps.logger.info({ userId: outcome.userId }, 'telegram chat linked');
      await ctx.reply('Linked: this chat now talks to your Jarvis. Send a message to begin.');
      return;
    case 'invalid':
      await ctx.reply('That code is wrong, expired or used: get a new one in Jarvis.');
      return;
    case 'too_many_attempts':
      await ctx.reply(
        `Too many attempts from this chat: try again in ${Math.ceil(outcome.retryInMs / 60_000)} min.`,
      );
      return;
    case 'unavailable':
      await ctx.reply('Linking is unavailable right now: try again in a minute.');
      return;
  }
}

// Submits the message as a turn, as POST /v1/chat does (the user's rate limits, the
// orchestrator's budgets), and answers once it is accepted: the reply is sent when the turn
// ends, so a long turn does not hold up the updates of other chats behind it.
async function startTurn(
  ctx: Context,
  deps: ChatDeps,
  userId: string,
  chatId: string,
  text: string,
): Promise<void> {
  const { api } = ctx;
  const verdict = await deps.admitRate(userRateWindows(deps.namespace, userId, deps.limits, true));
  if (verdict && !verdict.isAdmitted) {
    const retryAfterS = Math.max(Math.ceil(verdict.resetMs / 1_000), 1);
    await ctx.reply(
      `Rate limit reached: ${verdict.window.limit} ${verdict.window.what} per minute; retry in ${retryAfterS} s.`,
    );
    return;
  }
  // The update's id, per bot: Telegram delivers an update again when the poller stopped before
  // confirming it, and that must be the same turn, not a second one.
  const idempotencyKey = `telegram:${ctx.me.id}:${ctx.update.update_id}`;
  const turnId = uuidv5(`${userId}\n${idempotencyKey}`, TELEGRAM_TURN_NAMESPACE);
  const { timeZone } = await getSettings(deps.pool, userId);
  let followed: Followed;
  try {
    followed = await startAndFollow(deps, turnId, async () => {
      await deps.bus.request(
        turnSubmit,
        { userId, message: text, turnId, idempotencyKey, timeZone },
        { timeoutMs: deps.submitTimeoutMs },
      );
    });
  } catch (error) {
    if (!isBusError(error)) deps.logger.error({ err: error }, 'telegram turn not submitted');
    await ctx.reply(`Jarvis could not take this message: ${describeFailure(error)}`);
    return;
  }
  deps.track(replyWhenDone(api, chatId, followed));
}

// A reply to a question's message answers that question, whichever others wait (a plain
// message answers the one waiting longest, as a turn of the conversation).
async function answerQuestion(
  ctx: Context,
  deps: ChatDeps,
  question: QuestionMessage,
  text: string,
): Promise<void> {
  try {
    const { mission } = await deps.bus.request(
      orchestratorMissionsAnswer,
      { userId: question.userId, id: question.missionId, questionId: question.questionId, text },
      { timeoutMs: deps.submitTimeoutMs },
    );
    await ctx.reply(`I passed your answer on to the mission “${cut(mission.objective, 120)}”.`);
  } catch (error) {
    if (isBusError(error) && (error.code === 'conflict' || error.code === 'not_found')) {
      await ctx.reply(
        'This question no longer waits for an answer (answered, expired or cancelled).',
      );
      return;
    }
    if (!isBusError(error)) deps.logger.error({ err: error }, 'telegram answer not passed on');
    await ctx.reply(`Jarvis could not take this answer: ${describeFailure(error)}`);
  }
}

type Followed = { outcome: ReturnType<typeof awaitTurnOutcome> };

// Runs `start` (a submit, a decision) and resolves once it is done, with the wait for the turn's
// outcome going on: the update's handler answers at once, and the reply follows.
async function startAndFollow(
  deps: ChatDeps,
  turnId: string,
  start: () => Promise<void>,
): Promise<Followed> {
  let onStarted: () => void = () => {};
  const started = new Promise<void>((resolve) => {
    onStarted = resolve;
  });
  const outcome = awaitTurnOutcome(deps.bus, turnId, deps.turnTimeoutMs, async () => {
    await start();
    onStarted();
  });
  await Promise.race([started, outcome]);
  return { outcome };
}

// Telegram shows "typing…" for five seconds after a chat action, or until the next message.
const TYPING_EVERY_MS = 4_500;

async function replyWhenDone(api: Api, chatId: string, followed: Followed): Promise<void> {
  // The chat shows the bot typing while the turn runs; a failed chat action costs nothing.
  const showTyping = () => api.sendChatAction(chatId, 'typing').catch(() => {});
  void showTyping();
  const typing = setInterval(showTyping, TYPING_EVERY_MS);
  let text: string;
  try {
    text = (await followed.outcome).reply.content || '(no reply)';
  } catch (error) {
    // Past TURN_TIMEOUT_MS this chat stops waiting; the turn goes on and its reply is kept.
    text =
      isBusError(error) && error.code === 'timeout'
        ? 'No reply yet: it will be in your conversation in Jarvis when the turn ends.'
        : `This turn failed: ${describeFailure(error)}`;
  } finally {
    clearInterval(typing);
  }
  await sendText(api, chatId, text);
}

// An approval's Approve or Deny button: only the linked chat's own user decides, and only their
// own approvals (the orchestrator looks the approval up for that user).
async function decideFromButton(ctx: Context, deps: ChatDeps): Promise<void> {
  const query = ctx.callbackQuery;
  const message = query?.message;
  if (!query || !message) return;
  if (message.chat.type !== 'private' || query.from.id !== message.chat.id) {
    await ctx.answerCallbackQuery({ text: NOT_YOURS });
    return;
  }
  const chatId = String(message.chat.id);
  const link = await findTelegramLinkByChat(deps.pool, chatId);
  if (!link) {
    await ctx.answerCallbackQuery({ text: NOT_LINKED });
    return;
  }
  const parsed = DECISION_DATA.exec(query.data ?? '');
  if (!parsed) {
    await ctx.answerCallbackQuery({ text: 'This button does nothing any more.' });
    return;
  }
  const decision = parsed[1] === 'approve' ? 'approve' : 'deny';
  const id = parsed[2] ?? '';
  const userId = link.userId;
  let status: ApprovalStatus;
  try {
    const { approval } = await deps.bus.request(orchestratorApprovalsGet, { userId, id });
    status = approval.status;
    if (status === 'pending') {
      // The run goes on once decided, and its reply comes to this chat, as the gateway answers a
      // decision with the run's reply.
      const followed = await startAndFollow(deps, approval.turnId, async () => {
        const answer = await deps.bus.request(orchestratorApprovalsDecide, {
          userId,
          id,
          decision,
        });
        status = answer.approval.status;
      });
      deps.track(replyWhenDone(ctx.api, chatId, followed));
    }
  } catch (error) {
    if (!isBusError(error) || error.code !== 'conflict') {
      await ctx.answerCallbackQuery({ text: `Not decided: ${describeFailure(error)}` });
      return;
    }
    // Decided or expired meanwhile (on the web, say): the message shows what it came to.
    ({
      approval: { status },
    } = await deps.bus.request(orchestratorApprovalsGet, { userId, id }));
  }
  const label = STATUS_LABELS[status];
  await ctx.answerCallbackQuery({ text: label });
  await ctx
    .editMessageText(`${escapeHtml(message.text ?? '')}\n\n<b>${escapeHtml(label)}</b>`, {
      parse_mode: 'HTML',
      link_preview_options: { is_disabled: true },
    })
    .catch((error: unknown) => {
      // A press on a message that already shows the decision: Telegram refuses an edit that
      // changes nothing, and there is nothing to change.
      if (
        !(error instanceof GrammyError && error.description.includes('message is not modified'))
      ) {
        throw error;
      }
    });
}

// A typed error's message is written for the user (a budget spent, a timeout); of anything else
// the chat hears only that it went wrong.
function describeFailure(error: unknown): string {
  return isBusError(error) ? error.message : 'something went wrong';
}
