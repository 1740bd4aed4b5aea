import { createHash } from 'node:crypto';
import { type BlobStore, type Bus, describeZodError, isBusError } from '@jarvis/bus';
import {
  EXPORT_VERSION,
  type ExportedWorkspaceFile,
  ExportFileRecord,
  ExportHeader,
  type ExportRecord,
  type ExportRecordType,
  IMPORT_BATCH_MAX_RECORDS,
  type ImportCounts,
  type InstructionsImport,
  type MemoryExportImportResponse,
  memoryImportRecords,
  type NotImportedWorkspaceFile,
  newWorkspaceBlobName,
  type RuleOverCap,
  toolsWorkspacesPut,
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
// The memory's records are held until the whole file checks out; workspace files are not (they
// wait in the uploads bucket), so only the records count against this.
const MEMORY_RECORDS_MAX_BYTES = 64 * 1_024 * 1_024;
// One workspace file of the largest size, read out of the bucket into Postgres.
const WORKSPACE_PUT_TIMEOUT_MS = 60_000;
// Why a workspace file of the import has no workspace to go to.
const NO_MISSIONS = "missions are not in the export, so a mission's files have no mission to go to";
const NO_CONVERSATION = 'its conversation is not in the file';

// Postgres refuses \u0000 in text and jsonb; an escaped backslash before "u0000" is not one.
const ESCAPED_NUL = /(^|[^\\])(\\\\)*\\u0000/;

type Numbered<T> = { record: T; line: number };
type RecordOf<T extends ExportRecordType> = Extract<ExportRecord, { type: T }>;

// A workspace file of the import whose bytes wait in the uploads bucket as `blob`.
type StagedWorkspaceFile = Omit<ExportedWorkspaceFile, 'content' | 'type'> & {
  line: number;
  blob: string;
};

type ExportFileLimits = {
  // The largest memory record (it goes to the memory service in one NATS message).
  maxRecordBytes: number;
  // All the memory records together, which are held until the file checks out.
  maxMemoryBytes: number;
};

function lineError(line: number, problem: string): HttpError {
  return new HttpError('bad_request', `line ${line}: ${problem}`);
}

function isWorkspaceFileLine(value: unknown): boolean {
  return (
    typeof value === 'object' && value !== null && 'type' in value && value.type === 'workspaceFile'
  );
}

// Checks an export file (JSON Lines) line by line, as it arrives: the header, then one record per
// line; blank lines are skipped. Every line is checked, and every reference must name a record of
// the file, before anything is imported: a bad line answers 400 with its number. A workspace file
// is checked and handed back at once (add answers it), for its bytes not to be held; finish
// answers the memory's records in import order: by type, each after the types it refers to, and a
// fact version after its successor (whose id it names).
class ExportFileChecker {
  private readonly records: Numbered<ExportRecord>[] = [];
  // Each workspace file's line, by kind, id and path: one named twice is a bad line.
  private readonly workspaceLines = new Map<string, number>();
  private hasHeader = false;
  private line = 0;
  private memoryBytes = 0;

  constructor(private readonly limits: ExportFileLimits) {}

  add(raw: string): Numbered<ExportedWorkspaceFile> | undefined {
    this.line += 1;
    const line = this.line;
    const json = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (json.trim() === '') return undefined;
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
          `expected the export header {"type":"header","format":"jarvis-memory","version":${EXPORT_VERSION},...} (${describeZodError(header.error)})`,
        );
      }
      this.hasHeader = true;
      return undefined;
    }
    const isWorkspaceFile = isWorkspaceFileLine(value);
    const size = Buffer.byteLength(json);
    if (!isWorkspaceFile) this.countMemoryRecord(line, size);
    if (ESCAPED_NUL.test(json)) throw lineError(line, 'must not contain NUL characters');
    const parsed = ExportFileRecord.safeParse(value);
    if (!parsed.success) throw lineError(line, describeZodError(parsed.error));
    const record = parsed.data;
    if (record.type !== 'workspaceFile') {
      this.records.push({ record, line });
      return undefined;
    }
    const key = JSON.stringify([record.kind, record.id, record.path]);
    const first = this.workspaceLines.get(key);
    if (first !== undefined) {
      throw lineError(line, `workspace file appears twice (first on line ${first})`);
    }
    this.workspaceLines.set(key, line);
    return { record, line };
  }

  private countMemoryRecord(line: number, size: number): void {
    const { maxRecordBytes, maxMemoryBytes } = this.limits;
    if (size > maxRecordBytes) {
      throw lineError(line, `record too large (${size} bytes; at most ${maxRecordBytes})`);
    }
    this.memoryBytes += size;
    if (this.memoryBytes > maxMemoryBytes) {
      throw new HttpError(
        'payload_too_large',
        `line ${line}: the memory's records come to more than ${maxMemoryBytes} bytes, the most one import takes`,
      );
    }
  }

  finish(): ExportRecord[] {
    if (!this.hasHeader) throw lineError(1, 'expected the export header; the file is empty');
    return orderForImport(this.records);
  }

  // Each fact's line, by its id (unique once finish has checked the file), for the answer to
  // name a rule's line.
  factLines(): Map<string, number> {
    return new Map(ofType(this.records, 'fact').map(({ record, line }) => [record.id, line]));
  }
}

type CheckedExportFile = {
  records: ExportRecord[];
  workspaceFiles: Numbered<ExportedWorkspaceFile>[];
};

export function parseExportFile(text: string, limits: ExportFileLimits): CheckedExportFile {
  const checker = new ExportFileChecker(limits);
  const workspaceFiles: Numbered<ExportedWorkspaceFile>[] = [];
  for (const line of text.split('\n')) {
    const workspaceFile = checker.add(line);
    if (workspaceFile) workspaceFiles.push(workspaceFile);
  }
  return { records: checker.finish(), workspaceFiles };
}

// The same from lines as they arrive: only the memory's records are kept, never the file; each
// conversation's workspace file's bytes go to the uploads bucket as they are read, and its blob
// into `unsent`, which the caller empties whatever happens. A mission's file is only noted: it
// has nowhere to go (missions are not exported).
async function readExportFile(
  lines: AsyncIterable<string>,
  limits: ExportFileLimits,
  store: BlobStore,
  unsent: Set<string>,
): Promise<{
  records: ExportRecord[];
  factLines: Map<string, number>;
  workspaceFiles: StagedWorkspaceFile[];
  missionFiles: NotImportedWorkspaceFile[];
}> {
  const checker = new ExportFileChecker(limits);
  const workspaceFiles: StagedWorkspaceFile[] = [];
  const missionFiles: NotImportedWorkspaceFile[] = [];
  for await (const line of lines) {
    const workspaceFile = checker.add(line);
    if (!workspaceFile) continue;
    const { kind, id, path } = workspaceFile.record;
    if (kind === 'mission') {
      missionFiles.push({ line: workspaceFile.line, kind, id, path, reason: NO_MISSIONS });
      continue;
    }
    workspaceFiles.push(await stageWorkspaceFile(store, workspaceFile, unsent));
  }
  return {
    records: checker.finish(),
    factLines: checker.factLines(),
    workspaceFiles,
    missionFiles,
  };
}

async function stageWorkspaceFile(
  store: BlobStore,
  { record, line }: Numbered<ExportedWorkspaceFile>,
  unsent: Set<string>,
): Promise<StagedWorkspaceFile> {
  const { kind, id, path, mediaType } = record;
  const blob = newWorkspaceBlobName();
  unsent.add(blob);
  await store.put(blob, Buffer.from(record.content, 'base64'));
  return { line, kind, id, path, mediaType, blob };
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
  const instructions = ofType(records, 'instructions');
  const conversations = ofType(records, 'conversation');
  const messages = ofType(records, 'message');
  const summaries = ofType(records, 'summary');
  const facts = ofType(records, 'fact');
  const files = ofType(records, 'file');
  const fileVersions = ofType(records, 'fileVersion');
  const documents = ofType(records, 'document');
  const chunks = ofType(records, 'documentChunk');

  indexByKey(instructions, (record) => record.type, 'the instructions record');
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
    ...instructions,
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

// The id the memory service gives an exported record when this user imports it (its importedId,
// services/memory/src/services/import-records-service.ts): a conversation's workspace files go
// to the workspace of the conversation the import made. The two must derive alike.
export function importedId(userId: string, exportedId: string): string {
  const bytes = createHash('sha256')
    .update(`${userId}:${exportedId.toLowerCase()}`)
    .digest()
    .subarray(0, 16);
  bytes.writeUInt8((bytes.readUInt8(6) & 0x0f) | 0x80, 6);
  bytes.writeUInt8((bytes.readUInt8(8) & 0x3f) | 0x80, 8);
  const hex = bytes.toString('hex');
  return [
    hex.slice(0, 8),
    hex.slice(8, 12),
    hex.slice(12, 16),
    hex.slice(16, 20),
    hex.slice(20),
  ].join('-');
}

export type ImportDeps = {
  bus: Bus;
  uploads: () => Promise<BlobStore>;
};

// Imports an export file, as its lines, for the user. Nothing is sent before the whole file
// checks out; then the memory's batches go one by one, each in its own transaction, then the
// workspace files one by one. An import cut short (a service down) can simply be sent again: what
// was stored is skipped, and a workspace file is written again over itself.
export async function importMemory(
  deps: ImportDeps,
  userId: string,
  lines: AsyncIterable<string>,
): Promise<MemoryExportImportResponse> {
  const { bus } = deps;
  const maxPayload = bus.nc.info?.max_payload ?? DEFAULT_MAX_PAYLOAD_BYTES;
  const store = await deps.uploads();
  const unsent = new Set<string>();
  try {
    const { records, factLines, workspaceFiles, missionFiles } = await readExportFile(
      lines,
      {
        maxRecordBytes: maxPayload - PAYLOAD_MARGIN_BYTES,
        maxMemoryBytes: MEMORY_RECORDS_MAX_BYTES,
      },
      store,
      unsent,
    );
    const memory = await importRecords(bus, userId, records, maxPayload);
    const conversationIds = new Set(
      records.filter((record) => record.type === 'conversation').map((record) => record.id),
    );
    const workspaces = await importWorkspaceFiles(bus, userId, workspaceFiles, {
      conversationIds,
      unsent,
    });
    return {
      imported: { ...memory.imported, workspaceFiles: workspaces.imported },
      notImported: [...missionFiles, ...workspaces.notImported].sort((a, b) => a.line - b.line),
      rulesOverCap: memory.rulesOverCap
        // Memory names only facts of the file, so each has a line.
        .map((rule) => ({ ...rule, line: factLines.get(rule.id) ?? 1 }))
        .sort((a, b) => a.line - b.line),
      instructions: memory.instructions,
    };
  } finally {
    // Files never sent on (a bad line later in the file, a service down, no workspace to go to):
    // the bucket's time to live would take them too, an hour later.
    for (const blob of unsent) await store.delete(blob).catch(() => undefined);
  }
}

async function importRecords(
  bus: Bus,
  userId: string,
  records: ExportRecord[],
  maxPayload: number,
): Promise<{
  imported: ImportCounts;
  rulesOverCap: RuleOverCap[];
  instructions: InstructionsImport;
}> {
  const total = { ...NOTHING };
  const rulesOverCap: RuleOverCap[] = [];
  // The file's instructions go in the first batch; the others answer none.
  let instructions: InstructionsImport = 'none';
  for (const batch of planBatches(records, maxPayload * BATCH_SHARE_OF_MAX_PAYLOAD)) {
    const answer = await bus.request(
      memoryImportRecords,
      { userId, records: batch },
      { timeoutMs: BATCH_TIMEOUT_MS },
    );
    const { imported } = answer;
    rulesOverCap.push(...answer.rulesOverCap);
    if (answer.instructions !== 'none') instructions = answer.instructions;
    total.conversations += imported.conversations;
    total.messages += imported.messages;
    total.summaries += imported.summaries;
    total.facts += imported.facts;
    total.files += imported.files;
    total.documents += imported.documents;
  }
  return { imported: total, rulesOverCap, instructions };
}

// Each file goes through tools.workspaces.put, which deletes its blob whatever it answers. One the
// tools service refuses (over the file size limit or the quota, in the way of another) is
// reported, not fatal: the rest of the import stands.
async function importWorkspaceFiles(
  bus: Bus,
  userId: string,
  files: StagedWorkspaceFile[],
  context: { conversationIds: Set<string>; unsent: Set<string> },
): Promise<{ imported: number; notImported: NotImportedWorkspaceFile[] }> {
  let imported = 0;
  const notImported: NotImportedWorkspaceFile[] = [];
  for (const file of files) {
    const { line, kind, id, path } = file;
    let reason: string | undefined = NO_CONVERSATION;
    if (context.conversationIds.has(id)) {
      context.unsent.delete(file.blob);
      const stored = await putWorkspaceFile(bus, userId, file);
      reason = typeof stored === 'string' ? stored : undefined;
      if (typeof stored !== 'string' && stored.created) imported += 1;
    }
    if (reason !== undefined) notImported.push({ line, kind, id, path, reason });
  }
  return { imported, notImported };
}

// The stored file, or why the tools service refused it.
async function putWorkspaceFile(bus: Bus, userId: string, file: StagedWorkspaceFile) {
  try {
    return await bus.request(
      toolsWorkspacesPut,
      {
        userId,
        kind: file.kind,
        id: importedId(userId, file.id),
        path: file.path,
        blob: file.blob,
        mediaType: file.mediaType,
      },
      { timeoutMs: WORKSPACE_PUT_TIMEOUT_MS },
    );
  } catch (error) {
    if (isBusError(error) && (error.code === 'payload_too_large' || error.code === 'bad_request')) {
      return error.message;
    }
    throw error;
  }
}
