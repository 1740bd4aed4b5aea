import { createHash, randomInt, timingSafeEqual } from 'node:crypto';
import { BusError } from '@jarvis/bus';
import {
  type Channel,
  type ChannelSettings,
  type ChannelType,
  DEFAULT_CHANNEL_EVENTS,
  SECRET_MASK,
} from '@jarvis/contracts';
import { type Pool, withTransaction } from '@jarvis/db';
import { type OutboundGuard, OutboundRefusedError } from '@jarvis/net-guard';
import type { Logger } from '@jarvis/telemetry';
import { resolveThroughGuard, smtpUrl } from './address-check';
import { type SecretBox, SendError, type StoredChannel } from './channel';
import {
  countEmailConfirmationAttempt,
  deleteChannel,
  deleteEmailConfirmation,
  getChannel,
  getEmailConfirmation,
  type ListedChannel,
  listChannels,
  markEmailConfirmed,
  putChannel,
  saveEmailConfirmation,
} from './channels-repository';
import { type SmtpServer, sendMail, verifySmtp } from './email-transport';
import { countPushSubscriptions, deleteAllPushSubscriptions } from './push/push-repository';

// Saving, listing and removing a user's channels, and confirming an email address. What is
// wrong with a channel is answered when it is saved, naming the field: an invalid or private
// destination, an SMTP server that cannot be reached or refuses the login, a webhook without a
// secret. Secrets are never answered (SECRET_MASK) nor logged.

export type ChannelSettingsDeps = {
  pool: Pool;
  box: SecretBox;
  guard: OutboundGuard;
  logger: Logger;
  // The install's SMTP server (SMTP_*): email channels without their own send through it, only
  // to addresses confirmed with a mailed code, so that the install is no mail relay.
  installSmtp: SmtpServer | undefined;
  // How long reaching an SMTP server (verifying it, or mailing the code) may take in all when a
  // channel is saved: within the gateway's wait, so that the user hears why it failed.
  smtpTimeoutMs: number;
};

// A confirmation code is good for this long, and for this many tries.
const CODE_TTL_MS = 15 * 60_000;
const CODE_MAX_ATTEMPTS = 5;
// Between two codes mailed to a user: saving the channel again cannot make the install mail a
// stream of codes to someone.
const CODE_RESEND_MS = 60_000;

type Listed = Omit<ListedChannel, 'hasSecrets'>;

// The API's view of a channel: its secrets only as the mask; Web Push with its devices counted.
function toChannelView(channel: Listed, hasSecrets: boolean, devices: number): Channel {
  const common = { events: channel.events, updatedAt: channel.updatedAt.toISOString() };
  const { config } = channel;
  switch (config.type) {
    case 'ntfy':
      return {
        type: 'ntfy',
        url: config.url,
        topic: config.topic,
        priority: config.priority,
        ...(config.clickUrl ? { clickUrl: config.clickUrl } : {}),
        ...(hasSecrets ? { token: SECRET_MASK } : {}),
        ...common,
      };
    case 'webhook':
      return {
        type: 'webhook',
        url: config.url,
        format: config.format,
        secret: SECRET_MASK,
        ...common,
      };
    case 'email':
      return {
        type: 'email',
        to: config.to,
        ...(config.smtp
          ? { smtp: { ...config.smtp, ...(hasSecrets ? { password: SECRET_MASK } : {}) } }
          : {}),
        isConfirmed: channel.isConfirmed,
        ...common,
      };
    case 'telegram':
      return { type: 'telegram', username: config.username, ...common };
    case 'webpush':
      return { type: 'webpush', devices, ...common };
  }
}

function storedView(channel: StoredChannel, devices = 0): Channel {
  const { secrets, ...rest } = channel;
  return toChannelView(rest, Object.values(secrets).some(Boolean), devices);
}

export async function listChannelViews(pool: Pool, userId: string): Promise<Channel[]> {
  const channels = await listChannels(pool, userId);
  const devices = channels.some((channel) => channel.type === 'webpush')
    ? await countPushSubscriptions(pool, userId)
    : 0;
  return channels.map(({ hasSecrets, ...channel }) => toChannelView(channel, hasSecrets, devices));
}

export async function saveChannel(
  deps: ChannelSettingsDeps,
  userId: string,
  settings: ChannelSettings,
): Promise<Channel> {
  const existing = await getChannel(deps.pool, deps.box, userId, settings.type);
  const events = settings.events ?? existing?.events ?? DEFAULT_CHANNEL_EVENTS;
  if (settings.type === 'webpush') return saveWebPush(deps, userId, existing, events);
  const saved =
    settings.type === 'ntfy'
      ? await saveNtfy(deps, userId, settings, existing, events)
      : settings.type === 'webhook'
        ? await saveWebhook(deps, userId, settings, existing, events)
        : await saveEmail(deps, userId, settings, existing, events);
  deps.logger.info({ userId, channel: settings.type }, 'notification channel saved');
  return storedView(saved);
}

// Only the kinds it gets: the channel is made by its first device (POST
// /v1/notifications/push/subscriptions), which has keys only a browser can make.
async function saveWebPush(
  deps: ChannelSettingsDeps,
  userId: string,
  existing: StoredChannel | undefined,
  events: Events,
): Promise<Channel> {
  if (!existing) {
    throw new BusError(
      'bad_request',
      'type: subscribe a device first (Settings, "Subscribe this device"): Web Push needs a browser\'s subscription',
    );
  }
  const saved = await putChannel(deps.pool, deps.box, {
    userId,
    config: { type: 'webpush' },
    secrets: {},
    events,
    isConfirmed: true,
  });
  deps.logger.info({ userId, channel: 'webpush' }, 'notification channel saved');
  return storedView(saved, await countPushSubscriptions(deps.pool, userId));
}

type Events = StoredChannel['events'];

async function saveNtfy(
  deps: ChannelSettingsDeps,
  userId: string,
  settings: Extract<ChannelSettings, { type: 'ntfy' }>,
  existing: StoredChannel | undefined,
  events: Events,
): Promise<StoredChannel> {
  await checkDestination(deps.guard, settings.url, 'url');
  // A token left out is kept only for the same server: it must not follow the channel to
  // another one.
  const isSameServer =
    existing?.config.type === 'ntfy' &&
    new URL(existing.config.url).origin === new URL(settings.url).origin;
  return putChannel(deps.pool, deps.box, {
    userId,
    config: {
      type: 'ntfy',
      url: settings.url,
      topic: settings.topic,
      priority: settings.priority,
      ...(settings.clickUrl ? { clickUrl: settings.clickUrl } : {}),
    },
    secrets: settings.token ? { token: settings.token } : isSameServer ? undefined : {},
    events,
    isConfirmed: true,
  });
}

async function saveWebhook(
  deps: ChannelSettingsDeps,
  userId: string,
  settings: Extract<ChannelSettings, { type: 'webhook' }>,
  existing: StoredChannel | undefined,
  events: Events,
): Promise<StoredChannel> {
  if (!settings.secret && !existing?.secrets.secret) {
    throw new BusError(
      'bad_request',
      'secret: a new webhook needs a secret (at least 16 characters) to sign its requests with',
    );
  }
  await checkDestination(deps.guard, settings.url, 'url');
  return putChannel(deps.pool, deps.box, {
    userId,
    config: { type: 'webhook', url: settings.url, format: settings.format },
    secrets: settings.secret ? { secret: settings.secret } : undefined,
    events,
    isConfirmed: true,
  });
}

async function saveEmail(
  deps: ChannelSettingsDeps,
  userId: string,
  settings: Extract<ChannelSettings, { type: 'email' }>,
  existing: StoredChannel | undefined,
  events: Events,
): Promise<StoredChannel> {
  const { smtp } = settings;
  if (!smtp) return saveEmailForInstallSmtp(deps, userId, settings.to, existing, events);
  await checkSmtpHost(deps.guard, smtp.host, smtp.port);
  const stored = existing?.config.type === 'email' ? existing.config.smtp : undefined;
  // A password left out is kept only for the same server and login.
  const password =
    smtp.password ??
    (stored?.host === smtp.host && stored.user === smtp.user
      ? existing?.secrets.smtpPassword
      : undefined);
  const { password: _, ...config } = smtp;
  try {
    await verifySmtp(
      { ...config, password },
      {
        guard: deps.guard,
        timeoutMs: deps.smtpTimeoutMs,
        signal: AbortSignal.timeout(deps.smtpTimeoutMs),
      },
    );
  } catch (error) {
    if (!(error instanceof SendError)) throw error;
    const field = /refused the login/.test(error.message)
      ? 'smtp.password'
      : /TLS failed/.test(error.message)
        ? 'smtp.security'
        : 'smtp.host';
    throw new BusError('bad_request', `${field}: ${error.message}`);
  }
  // The user's own server needs no confirmation: it is not the install that relays.
  await deleteEmailConfirmation(deps.pool, userId);
  return putChannel(deps.pool, deps.box, {
    userId,
    config: { type: 'email', to: settings.to, smtp: config },
    secrets: password ? { smtpPassword: password } : {},
    events,
    isConfirmed: true,
  });
}

async function saveEmailForInstallSmtp(
  deps: ChannelSettingsDeps,
  userId: string,
  to: string,
  existing: StoredChannel | undefined,
  events: Events,
): Promise<StoredChannel> {
  const { installSmtp } = deps;
  if (!installSmtp) {
    throw new BusError(
      'bad_request',
      'smtp: this install has no SMTP server of its own (SMTP_HOST): give your own in smtp',
    );
  }
  const isConfirmedAlready =
    existing?.config.type === 'email' &&
    !existing.config.smtp &&
    existing.isConfirmed &&
    sameAddress(existing.config.to, to);
  const write = {
    userId,
    config: { type: 'email' as const, to },
    secrets: {},
    events,
    isConfirmed: isConfirmedAlready,
  };
  if (isConfirmedAlready) return putChannel(deps.pool, deps.box, write);

  const pending = await getEmailConfirmation(deps.pool, userId);
  if (pending && pending.expiresAt.getTime() - CODE_TTL_MS + CODE_RESEND_MS > Date.now()) {
    throw new BusError('rate_limited', 'a code was mailed less than a minute ago: wait for it');
  }
  const code = String(randomInt(0, 1_000_000)).padStart(6, '0');
  try {
    await sendMail(
      installSmtp,
      {
        to,
        subject: `Your Jarvis confirmation code: ${code}`,
        text: [
          `Enter ${code} in Jarvis's Settings to receive notifications at this address.`,
          'The code is good for 15 minutes. If you did not ask for it, ignore this mail: nothing will be sent to you.',
        ].join('\n\n'),
      },
      {
        guard: undefined,
        timeoutMs: deps.smtpTimeoutMs,
        signal: AbortSignal.timeout(deps.smtpTimeoutMs),
      },
    );
  } catch (error) {
    if (!(error instanceof SendError)) throw error;
    // The install's server failing is not the user's mistake: nothing is saved, they may retry.
    throw new BusError('unavailable', `the confirmation mail could not be sent: ${error.message}`);
  }
  return withTransaction(deps.pool, async (client) => {
    await saveEmailConfirmation(client, userId, {
      address: to,
      codeHash: hashCode(userId, to, code),
      expiresAt: new Date(Date.now() + CODE_TTL_MS),
    });
    return putChannel(client, deps.box, write);
  });
}

export async function confirmEmail(
  deps: ChannelSettingsDeps,
  userId: string,
  code: string,
): Promise<Channel> {
  const pending = await countEmailConfirmationAttempt(deps.pool, userId);
  if (!pending) {
    throw new BusError(
      'bad_request',
      'code: no code is waiting: save the email channel to get one',
    );
  }
  if (pending.attempts >= CODE_MAX_ATTEMPTS) {
    throw new BusError(
      'bad_request',
      'code: too many wrong codes: save the email channel for a new one',
    );
  }
  if (pending.expiresAt.getTime() <= Date.now()) {
    throw new BusError('bad_request', 'code: it expired: save the email channel for a new one');
  }
  if (!timingSafeEqual(hashCode(userId, pending.address, code), pending.codeHash)) {
    const left = CODE_MAX_ATTEMPTS - pending.attempts - 1;
    throw new BusError(
      'bad_request',
      `code: wrong code (${left} ${left === 1 ? 'try' : 'tries'} left)`,
    );
  }
  const isConfirmed = await markEmailConfirmed(deps.pool, userId, pending.address);
  await deleteEmailConfirmation(deps.pool, userId);
  const channel = isConfirmed ? await getChannel(deps.pool, deps.box, userId, 'email') : undefined;
  if (!channel) {
    throw new BusError(
      'bad_request',
      'code: the email channel no longer has the address it was mailed to',
    );
  }
  return storedView(channel);
}

export async function removeChannel(
  deps: ChannelSettingsDeps,
  userId: string,
  type: ChannelType,
): Promise<void> {
  if (!(await deleteChannel(deps.pool, userId, type))) {
    throw new BusError('not_found', `no ${type} channel`);
  }
  if (type === 'email') await deleteEmailConfirmation(deps.pool, userId);
  // The channel's devices go with it: without the channel nothing is pushed to them, and a device
  // subscribing again makes the channel anew.
  if (type === 'webpush') await deleteAllPushSubscriptions(deps.pool, userId);
  deps.logger.info({ userId, channel: type }, 'notification channel removed');
}

// Bound to the user and the address: a code is good for nothing else. Six digits are few, so
// what keeps them from being guessed is the attempt limit and the expiry, not the hash.
function hashCode(userId: string, address: string, code: string): Buffer {
  return createHash('sha256').update(`${userId}\n${address.toLowerCase()}\n${code}`).digest();
}

function sameAddress(a: string, b: string): boolean {
  return a.toLowerCase() === b.toLowerCase();
}

// A user-given URL must resolve, and to addresses the outbound guard lets through.
export async function checkDestination(
  guard: OutboundGuard,
  text: string,
  field: string,
): Promise<void> {
  const url = new URL(text);
  if (url.username || url.password) {
    throw new BusError(
      'bad_request',
      `${field}: a login in the URL is not sent; give a token instead`,
    );
  }
  await checkResolves(guard, url, field);
}

async function checkSmtpHost(guard: OutboundGuard, host: string, port: number): Promise<void> {
  if (!URL.canParse(`smtp://${host}`) && !URL.canParse(`smtp://[${host}]`)) {
    throw new BusError('bad_request', `smtp.host: ${host} is not a host name or address`);
  }
  await checkResolves(guard, smtpUrl(host, port), 'smtp.host');
}

async function checkResolves(guard: OutboundGuard, url: URL, field: string): Promise<void> {
  try {
    await resolveThroughGuard(guard, url);
  } catch (error) {
    if (error instanceof OutboundRefusedError) {
      throw new BusError(
        'bad_request',
        `${field}: ${error.message} (the operator can allow a self-hosted server there)`,
      );
    }
    throw new BusError('bad_request', `${field}: ${url.hostname} cannot be resolved`);
  }
}
