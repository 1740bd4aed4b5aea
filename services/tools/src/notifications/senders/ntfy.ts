import type { OutboundGuard } from '@jarvis/net-guard';
import { type ChannelSender, SendError } from '../channel';
import { postThroughGuard } from './http-post';

export type NtfySenderDeps = { guard: OutboundGuard };

// ntfy keeps a message up to this many bytes as text; a longer one would become an attachment.
const NTFY_MESSAGE_MAX_BYTES = 4_096;
// A title is one line on a phone; a header of kilobytes is refused by some proxies.
const TITLE_MAX_CHARS = 250;

// Publishes to `<url>/<topic>` (ntfy's plain POST): the text as the body, the title, priority and
// click URL as headers, the token as a Bearer token.
export function createNtfySender(deps: NtfySenderDeps): ChannelSender {
  return {
    type: 'ntfy',
    async send(channel, notification, signal) {
      const { config } = channel;
      if (config.type !== 'ntfy')
        throw new SendError('not an ntfy channel', { isRetryable: false });
      const token = channel.secrets.token;
      // Through URL: an address with non-ASCII characters comes out encoded, as a header needs.
      const clickUrl = config.clickUrl ?? notification.url;
      const click = clickUrl && new URL(clickUrl).href;
      await postThroughGuard(
        deps.guard,
        {
          url: topicUrl(config.url, config.topic),
          headers: {
            'content-type': 'text/plain; charset=utf-8',
            title: encodeHeaderWord(notification.title.slice(0, TITLE_MAX_CHARS)),
            priority: String(config.priority),
            ...(click ? { click } : {}),
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          body: truncateBytes(notification.text || notification.title, NTFY_MESSAGE_MAX_BYTES),
          secrets: token ? [token] : [],
        },
        signal,
      );
    },
  };
}

// A server behind a reverse proxy may sit under a path: the topic goes after it.
function topicUrl(base: string, topic: string): URL {
  const url = new URL(base);
  url.pathname = `${url.pathname.replace(/\/+$/, '')}/${topic}`;
  return url;
}

// HTTP headers are Latin-1 at best: a title with anything else is sent as an RFC 2047 encoded
// word, which ntfy decodes.
export function encodeHeaderWord(text: string): string {
  if (/^[\x20-\x7e]*$/.test(text)) return text;
  return `=?UTF-8?B?${Buffer.from(text, 'utf8').toString('base64')}?=`;
}

function truncateBytes(text: string, maxBytes: number): string {
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length <= maxBytes) return text;
  // Cut at a character boundary: a cut inside a UTF-8 sequence would decode to U+FFFD.
  let end = maxBytes - 3;
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end -= 1;
  return `${bytes.subarray(0, end).toString('utf8')}…`;
}
