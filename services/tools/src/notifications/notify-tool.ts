import { randomUUID } from 'node:crypto';
import { type Bus, BusError } from '@jarvis/bus';
import { type Pool, withTransaction } from '@jarvis/db';
import type { Tool } from '../registry';
import type { ToolsMetrics } from '../tools-metrics';
import { countRecentNotes, lockUserNotes } from './pipeline/deliveries-repository';
import { cut } from './pipeline/map-event';
import { countHeld, publishDeliveries, storeNotification } from './pipeline/pipeline';

type NotifyToolDeps = {
  bus: Bus;
  pool: Pool;
  // Notes one user's agent may send in an hour (NOTIFY_PER_HOUR).
  perHour: number;
  metrics?: ToolsMetrics;
};

type NotifyArgs = { text: string; title?: string; urgent: boolean };

const TEXT_MAX_CHARS = 1_000;
const TITLE_MAX_CHARS = 120;

// The agent tells the user something now, on the channels the user chose for notes. Limited per
// hour: a model in a loop must not flood a phone.
export function createNotifyTool(deps: NotifyToolDeps): Tool<NotifyArgs> {
  return {
    name: 'notify',
    description:
      "Send the user a short note now on their notification channels (phone push, Telegram, email, webhook, whichever they set up for notes), for something they asked to be told about or must know soon. Not for replies: the conversation already shows those. Notes wait for the end of the user's quiet hours unless urgent.",
    risk: 'safe',
    inputSchema: {
      type: 'object',
      properties: {
        text: {
          type: 'string',
          minLength: 1,
          maxLength: TEXT_MAX_CHARS,
          description: 'The note, short and self-contained.',
        },
        title: {
          type: 'string',
          minLength: 1,
          maxLength: TITLE_MAX_CHARS,
          nullable: true,
          description: 'A few words the notification shows first.',
        },
        urgent: {
          type: 'boolean',
          default: false,
          description: "Send even during the user's quiet hours. Only when it cannot wait.",
        },
      },
      required: ['text'],
      additionalProperties: false,
    },
    async run({ text, title, urgent }, context) {
      const id = randomUUID();
      const stored = await withTransaction(deps.pool, async (db) => {
        await lockUserNotes(db, context.userId);
        const sent = await countRecentNotes(db, context.userId);
        if (sent >= deps.perHour) {
          throw new BusError(
            'rate_limited',
            `the user gets at most ${deps.perHour} notes an hour and that many were sent in the last hour; nothing was sent. Tell the user in your reply instead`,
          );
        }
        return storeNotification(
          db,
          context.userId,
          {
            eventId: `note:${id}`,
            kind: 'note',
            occurredAt: new Date().toISOString(),
            title: title ?? cut(text, 60),
            text,
          },
          urgent,
        );
      });
      if (stored.isHeld) countHeld(deps.metrics, stored.channels);
      await publishDeliveries(deps.bus, stored.toPublish);
      if (stored.channels.length === 0) {
        return {
          sent: false,
          reason:
            'the user has no notification channel that takes notes (they can add one in Settings); nothing was sent',
        };
      }
      return {
        sent: true,
        channels: stored.channels,
        ...(stored.toPublish.length === 0 ? { heldUntilQuietHoursEnd: true } : {}),
      };
    },
  };
}
