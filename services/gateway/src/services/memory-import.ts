import { type Bus, describeZodError } from '@jarvis/bus';
import {
  ExportHeader,
  ExportRecord,
  type ExportRecordType,
  IMPORT_BATCH_MAX_RECORDS,
  type ImportCounts,
  type MemoryImportRecordsResponse,
  memoryImportRecords,
} from '@jarvis/contracts';
import { HttpError } from '@jarvis/service-kit';
import { isNestedTooDeep, JSON_TOO_DEEP } from './json-depth';

// NATS' own default, for a connection that has not reported its server's limit.
const DEFAULT_MAX_PAYLOAD_BYTES = 1_048_576;
// Room in one NATS message besides the records: the user id, the envelope, the trace headers.
const PAYLOAD_MARGIN_BYTES = 128 * 1_024;
// A batch fills at most this share of a message, like a history import's slice.
const BATCH_SHARE_OF_MAX_PAYLOAD = 0.5;
// A batch stores and indexes up to a thousand records in one transaction.
const BATCH_TIMEOUT_MS = 120_000;

// Postgres refuses \u0000 in text and jsonb; an escaped backslash before "u0000" is not one.
const ESCAPED_NUL = /(^|[^\\])(\\\\)*\\u0000/;

type Numbered<T> = { record: T; line: number };
type RecordOf<T extends ExportRecordType> = Extract<ExportRecord, { type: T }>;

function lineError(line: number, problem: string): HttpError {
  return new HttpError('bad_request', `line ${line}: ${problem}`);
}

// Checks an export file (JSON Lines) line by line, as it arrives: the header, then one record per
// line; blank lines are skipped. Every line is checked, and every reference must name a record of
// the file, before anything is imported: a bad line answers 400 with its number. finish answers
// the records in import order: by type, each after the types it refers to, and a fact version
// after its successor (whose id it names).
class ExportFileChecker {
  private readonly records: Numbered<ExportRecord>[] = [];
  private hasHeader = false;
  private line = 0;

  constructor(private readonly maxRecordBytes: number) {}

  add(raw: string): void {
    this.line += 1;
    const line = this.line;
    const json = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (json.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(json);
    } catch {
      throw lineError(line, 'not valid JSON');
    }
    if (isNestedTooDeep(value)) throw lineError(line, JSON_TOO_DEEP);
    if (!this.hasHeader) {
      const header = ExportHeader.safeParse(value);
      if (!header.success) {
        throw lineError(
          line,
          `expected the export header {"type":"header","format":"jarvis-memory","version":1,...} (${describeZodError(header.error)})`,
        );
      }
      this.hasHeader = true;
      return;
    }
    const size = Buffer.byteLength(json);
    if (size > this.maxRecordBytes) {
      throw lineError(line, `record too large (${size} bytes; at most ${this.maxRecordBytes})`);
    }
    if (ESCAPED_NUL.test(json)) throw lineError(line, 'must not contain NUL characters');
    const parsed = ExportRecord.safeParse(value);
    if (!parsed.success) throw lineError(line, describeZodError(parsed.error));
    this.records.push({ record: parsed.data, line });
  }

  finish(): ExportRecord[] {
    if (!this.hasHeader) throw lineError(1, 'expected the export header; the file is empty');
    return orderForImport(this.records);
  }
}

export function parseExportFile(text: string, maxRecordBytes: number): ExportRecord[] {
  const checker = new ExportFileChecker(maxRecordBytes);
  for (const line of text.split('\n')) checker.add(line);
  return checker.finish();
}

// The same from lines as they arrive: only the records are kept, never the file.
async function readExportFile(
  lines: AsyncIterable<string>,
  maxRecordBytes: number,
): Promise<ExportRecord[]> {
  const checker = new ExportFileChecker(maxRecordBytes);
  for await (const line of lines) checker.add(line);
  return checker.finish();
}

function ofType<T extends ExportRecordType>(
  records: Numbered<ExportRecord>[],
  type: T,
): Numbered<RecordOf<T>>[] {
  const matching: Numbered<RecordOf<T>>[] = [];
  for (const { record, line } of records) {
    if (isOfType(record, type)) matching.push({ record, line });
  }
  return matching;
}

function isOfType<T extends ExportRecordType>(
  record: ExportRecord,
  type: T,
): record is RecordOf<T> {
  return record.type === type;
}

// Remembers on which line each key first appeared; a key seen twice is a bad line.
function indexByKey<T>(items: Numbered<T>[], keyOf: (record: T) => string, what: string) {
  const lines = new Map<string, number>();
  for (const { record, line } of items) {
    const key = keyOf(record);
    const first = lines.get(key);
    if (first !== undefined)
      throw lineError(line, `${what} appears twice (first on line ${first})`);
    lines.set(key, line);
  }
  return lines;
}

function orderForImport(records: Numbered<ExportRecord>[]): ExportRecord[] {
  const conversations = ofType(records, 'conversation');
  const messages = ofType(records, 'message');
  const summaries = ofType(records, 'summary');
  const facts = ofType(records, 'fact');
  const files = ofType(records, 'file');
  const fileVersions = ofType(records, 'fileVersion');
  const documents = ofType(records, 'document');
  const chunks = ofType(records, 'documentChunk');

  const conversationLines = indexByKey(conversations, (record) => record.id, 'conversation id');
  const defaults = conversations.filter(({ record }) => record.isDefault);
  const secondDefault = defaults[1];
  if (secondDefault) {
    throw lineError(secondDefault.line, 'only one conversation may be the default');
  }
  indexByKey(messages, (record) => record.id, 'message id');
  const conversationOf = new Map(messages.map(({ record }) => [record.id, record.conversationId]));
  for (const { record, line } of messages) {
    if (!conversationLines.has(record.conversationId)) {
      throw lineError(line, 'conversationId: names no conversation of the file');
    }
  }
  indexByKey(summaries, (record) => record.id, 'summary id');
  for (const { record, line } of summaries) {
    for (const field of ['fromMessageId', 'toMessageId'] as const) {
      if (conversationOf.get(record[field]) !== record.conversationId) {
        throw lineError(line, `${field}: names no message of the summary's conversation`);
      }
    }
  }
  indexByKey(facts, (record) => record.id, 'fact id');
  const factIds = new Set(facts.map(({ record }) => record.id));
  indexByKey(
    facts.filter(({ record }) => record.supersededBy !== null),
    (record) => record.supersededBy ?? '',
    'supersededBy: a successor named by two versions',
  );
  for (const { record, line } of facts) {
    if (record.supersededBy !== null && !factIds.has(record.supersededBy)) {
      throw lineError(line, 'supersededBy: names no fact of the file');
    }
    if (record.sourceMessageIds.some((id) => !conversationOf.has(id))) {
      throw lineError(line, 'sourceMessageIds: names a message that is not in the file');
    }
  }
  const fileIds = new Set(indexByKey(files, (record) => record.id, 'file id').keys());
  indexByKey(fileVersions, (record) => `${record.fileId}:${record.version}`, 'file version');
  for (const { record, line } of fileVersions) {
    if (!fileIds.has(record.fileId)) throw lineError(line, 'fileId: names no file of the file');
  }
  const documentIds = new Set(indexByKey(documents, (record) => record.id, 'document id').keys());
  indexByKey(chunks, (record) => record.id, 'chunk id');
  indexByKey(chunks, (record) => `${record.documentId}:${record.index}`, 'chunk index');
  for (const { record, line } of chunks) {
    if (!documentIds.has(record.documentId)) {
      throw lineError(line, 'documentId: names no document of the file');
    }
  }

  return [
    ...conversations,
    ...messages,
    ...summaries,
    ...successorsFirst(facts),
    ...files,
    ...fileVersions,
    ...documents,
    ...chunks,
  ].map(({ record }) => record);
}

// A version names its successor, which must be stored first: each chain is walked to its newest
// version and placed newest first. A chain that loops back is a bad line.
function successorsFirst(facts: Numbered<RecordOf<'fact'>>[]): Numbered<RecordOf<'fact'>>[] {
  const byId = new Map(facts.map((fact) => [fact.record.id, fact]));
  const placed = new Set<string>();
  const ordered: Numbered<RecordOf<'fact'>>[] = [];
  for (const fact of facts) {
    const chain: Numbered<RecordOf<'fact'>>[] = [];
    const seen = new Set<string>();
    let current: Numbered<RecordOf<'fact'>> | undefined = fact;
    while (current && !placed.has(current.record.id)) {
      if (seen.has(current.record.id)) {
        throw lineError(current.line, 'supersededBy: the versions name each other in a loop');
      }
      seen.add(current.record.id);
      chain.push(current);
      const successor: string | null = current.record.supersededBy;
      current = successor === null ? undefined : byId.get(successor);
    }
    for (const version of chain.reverse()) {
      placed.add(version.record.id);
      ordered.push(version);
    }
  }
  return ordered;
}

// Consecutive records that together stay under `maxBytes` (a larger record goes alone).
export function planBatches(records: ExportRecord[], maxBytes: number): ExportRecord[][] {
  const batches: ExportRecord[][] = [];
  let batch: ExportRecord[] = [];
  let bytes = 0;
  for (const record of records) {
    const size = Buffer.byteLength(JSON.stringify(record));
    if (batch.length > 0 && (bytes + size > maxBytes || batch.length >= IMPORT_BATCH_MAX_RECORDS)) {
      batches.push(batch);
      batch = [];
      bytes = 0;
    }
    batch.push(record);
    bytes += size;
  }
  if (batch.length > 0) batches.push(batch);
  return batches;
}

const NOTHING: ImportCounts = {
  conversations: 0,
  messages: 0,
  summaries: 0,
  facts: 0,
  files: 0,
  documents: 0,
};

// Imports an export file, as its lines, for the user. Nothing is sent before the whole file
// checks out; then the batches go one by one, each in its own transaction. An import cut short
// (a service down) can simply be sent again: what was stored is skipped.
export async function importMemory(
  bus: Bus,
  userId: string,
  lines: AsyncIterable<string>,
): Promise<MemoryImportRecordsResponse> {
  const maxPayload = bus.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const records = await readExportFile(lines, maxPayload - PAYLOAD_MARGIN_BYTES);
  const total = { ...NOTHING };
  for (const batch of planBatches(records, maxPayload * BATCH_SHARE_OF_MAX_PAYLOAD)) {
    const { imported } = await bus.request(
      memoryImportRecords,
      { userId, records: batch },
      { timeoutMs: BATCH_TIMEOUT_MS },
    );
    total.conversations += imported.conversations;
    total.messages += imported.messages;
    total.summaries += imported.summaries;
    total.facts += imported.facts;
    total.files += imported.files;
    total.documents += imported.documents;
  }
  return { imported: total };
}
