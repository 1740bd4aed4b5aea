import { createHash, randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { type ImportedMessage, type ImportMessagesResponse, memoryImport } from '@jarvis/contracts';

// NATS caps a message (1 MB by default): a large import travels in slices well under it.
const SLICE_SHARE_OF_MAX_PAYLOAD = 0.5;
const MAX_SLICE_MESSAGES = 1_000;
const IMPORT_TIMEOUT_MS = 120_000;

export type ImportOptions = {
  userId: string;
  conversationId: string;
  messages: ImportedMessage[];
  // The client's Idempotency-Key: the same request again stores nothing twice and answers as the
  // first did; the key with another request (other messages, another conversation) is refused.
  idempotencyKey: string | undefined;
  // Whether the key is the client's own, held to one request (a ChatGPT export's key is not: a
  // conversation continued since the last export adds its new messages).
  isClientKey: boolean;
};

// The request as parsed, so spacing and field order in the client's JSON do not count.
function hashRequest(options: ImportOptions): string {
  const request = { conversationId: options.conversationId, messages: options.messages };
  return createHash('sha256').update(JSON.stringify(request)).digest('hex');
}

export async function importMessages(
  bus: Bus,
  options: ImportOptions,
): Promise<ImportMessagesResponse> {
  const batchKey = `import:${options.idempotencyKey ?? randomUUID()}`;
  const requestHash =
    options.idempotencyKey !== undefined && options.isClientKey ? hashRequest(options) : undefined;
  const budget = Math.floor((bus.nc.info?.max_payload ?? 1_048_576) * SLICE_SHARE_OF_MAX_PAYLOAD);
  let imported = 0;
  let start = 0;
  while (start < options.messages.length) {
    let end = start;
    let size = 0;
    while (end < options.messages.length) {
      const next = JSON.stringify(options.messages[end]).length;
      if (end > start && (size + next > budget || end - start >= MAX_SLICE_MESSAGES)) break;
      size += next;
      end++;
    }
    const result = await bus.request(
      memoryImport,
      {
        userId: options.userId,
        conversationId: options.conversationId,
        batchKey,
        firstIndex: start,
        ...(requestHash === undefined ? {} : { requestHash }),
        messages: options.messages.slice(start, end),
      },
      { timeoutMs: IMPORT_TIMEOUT_MS },
    );
    imported += result.imported;
    start = end;
  }
  return { imported };
}
