import type { Channel, ChannelType } from '@jarvis/contracts';

// What the channel forms of the Settings page hold (every field as text, as inputs give it) and
// the PUT body made of it. Pure, so it is unit-tested.

// Telegram is linked from the bot and Web Push subscribed from each browser: no form of fields.
export type FormType = Exclude<ChannelType, 'telegram' | 'webpush'>;
type Values = Record<string, string>;

// Secrets are never sent back: a stored one shows as the API's mask, and a field left empty
// keeps it.
export function initialValues(channel: Channel | undefined): Values {
  if (!channel) return { priority: '3', format: 'jarvis', 'smtp.security': 'starttls' };
  if (channel.type === 'ntfy') {
    return {
      url: channel.url,
      topic: channel.topic,
      priority: String(channel.priority),
      clickUrl: channel.clickUrl ?? '',
    };
  }
  if (channel.type === 'webhook') return { url: channel.url, format: channel.format };
  if (channel.type === 'email') {
    const { smtp } = channel;
    return {
      to: channel.to,
      ...(smtp
        ? {
            'smtp.host': smtp.host,
            'smtp.port': String(smtp.port),
            'smtp.security': smtp.security,
            'smtp.user': smtp.user ?? '',
            'smtp.from': smtp.from ?? '',
          }
        : { 'smtp.security': 'starttls' }),
    };
  }
  return {};
}

export function storedSecret(channel: Channel | undefined, field: string): string | undefined {
  if (channel?.type === 'ntfy' && field === 'token') return channel.token;
  if (channel?.type === 'webhook' && field === 'secret') return channel.secret;
  if (channel?.type === 'email' && field === 'smtp.password') return channel.smtp?.password;
  return undefined;
}

// The PUT body: empty optional fields are left out (a secret left out keeps the stored one);
// numbers go as numbers, so the API's checks name what is wrong with them.
export function bodyOf(type: FormType, values: Values, isOwnSmtp: boolean, events: string[]) {
  const text = (field: string) => values[field]?.trim() || undefined;
  const number = (field: string) => {
    const value = text(field);
    return value === undefined ? undefined : Number(value);
  };
  if (type === 'ntfy') {
    return {
      url: text('url'),
      topic: text('topic'),
      token: text('token'),
      priority: number('priority'),
      clickUrl: text('clickUrl'),
      events,
    };
  }
  if (type === 'webhook') {
    return { url: text('url'), secret: text('secret'), format: text('format'), events };
  }
  return {
    to: text('to'),
    smtp: isOwnSmtp
      ? {
          host: text('smtp.host'),
          port: number('smtp.port'),
          security: text('smtp.security'),
          user: text('smtp.user'),
          password: text('smtp.password'),
          from: text('smtp.from'),
        }
      : undefined,
    events,
  };
}
