import { createHash, randomBytes } from 'node:crypto';
import type { Pool } from '@jarvis/db';
import { admitRequest, type RateVerdict } from '@jarvis/service-kit';
import type { Redis } from 'ioredis';
import { saveTelegramLink } from '../channels-repository';
import { saveLinkCode, useLinkCode } from './link-codes-repository';

// How long a code links: long enough to open Telegram on a phone, short enough that a code seen
// over a shoulder is soon worthless.
export const LINK_CODE_TTL_MS = 10 * 60_000;

// /start attempts one chat may make in LINK_ATTEMPT_WINDOW_MS. A code is 192 random bits, so no
// one guesses it; the limit keeps a chat from trying codes it collected (or the bot from being
// used to probe the database) at any pace.
export const LINK_ATTEMPTS_PER_CHAT = 5;
const LINK_ATTEMPT_WINDOW_MS = 15 * 60_000;

// base64url of 24 random bytes: 32 characters of A-Z a-z 0-9 - _, which Telegram's /start
// parameter takes (at most 64 of those).
const CODE_PATTERN = /^[A-Za-z0-9_-]{32}$/;

function hashCode(code: string): Buffer {
  return createHash('sha256').update(code).digest();
}

export async function createLinkCode(
  pool: Pool,
  userId: string,
  now = new Date(),
): Promise<{ code: string; expiresAt: Date }> {
  const code = randomBytes(24).toString('base64url');
  const expiresAt = new Date(now.getTime() + LINK_CODE_TTL_MS);
  await saveLinkCode(pool, userId, hashCode(code), expiresAt);
  return { code, expiresAt };
}

export type LinkOutcome =
  | { status: 'linked'; userId: string }
  | { status: 'invalid' }
  | { status: 'too_many_attempts'; retryInMs: number }
  | { status: 'unavailable' };

export type RedeemDeps = { pool: Pool; redis: Redis; namespace: string };

// /start CODE from a private chat: counts the attempt against the chat, then uses the code up
// and links the chat to the code's user. The caller has checked that the chat is private and its
// sender is the chat's own user.
export async function redeemLinkCode(
  deps: RedeemDeps,
  chat: { chatId: string; username: string | null },
  code: string,
): Promise<LinkOutcome> {
  // Fails closed, unlike the chat's rate limits: linking is rare, and an unlimited guesser is
  // worse than a user asked to try again in a minute.
  let verdict: RateVerdict;
  try {
    if (deps.redis.status !== 'ready') return { status: 'unavailable' };
    verdict = await admitRequest(
      deps.redis,
      [
        {
          key: `${deps.namespace}:telegram:{chat:${chat.chatId}}:link-attempts`,
          limit: LINK_ATTEMPTS_PER_CHAT,
          what: 'link attempts',
        },
      ],
      LINK_ATTEMPT_WINDOW_MS,
      randomBytes(8).toString('hex'),
    );
  } catch {
    return { status: 'unavailable' };
  }
  if (!verdict.isAdmitted) return { status: 'too_many_attempts', retryInMs: verdict.resetMs };
  if (!CODE_PATTERN.test(code)) return { status: 'invalid' };
  const userId = await useLinkCode(deps.pool, hashCode(code));
  if (!userId) return { status: 'invalid' };
  await saveTelegramLink(deps.pool, userId, chat.chatId, chat.username);
  return { status: 'linked', userId };
}
