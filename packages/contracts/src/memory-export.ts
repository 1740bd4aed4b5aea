import { z } from 'zod';
import { Id, MESSAGE_MAX_CHARS, MessageRole, PG_INTEGER_MAX, Timestamp } from './common';
import { defineRpc } from './define';
import {
  DOCUMENT_PAGES_MAX,
  DOCUMENT_SOURCE_MAX_CHARS,
  DOCUMENT_TITLE_MAX_CHARS,
  DocumentContentType,
  DocumentMetadata,
} from './memory-documents';
import {
  FACT_SOURCE_MESSAGES_MAX,
  FactCategory,
  FactContent,
  FactImportance,
  FactTags,
} from './memory-facts';
import { FileContent, FileMetadata, FilePath, FileTags } from './memory-files';
import { InstructionsText } from './memory-instructions';
import { WorkspaceKind, WorkspacePath } from './tools-workspaces';

// Everything a user's memory holds, as JSON Lines: a header, then the user's standing instructions,
// then one record per line, each type after the types it refers to, then the files of the user's
// workspaces. Ids are the exporting
// install's: an import gives every record a new id derived from the importing user and the
// exported id, so importing a file twice adds nothing and two users can import the same file.
// Forgotten messages are not exported.

export const EXPORT_FORMAT = 'jarvis-memory';
// 2 added workspace files (type workspaceFile); 3 the standing instructions (type instructions).
// Older versions still import; an install that knows only older ones refuses a newer file at its
// header, not after reading the memory.
export const EXPORT_VERSION = 3;
const IMPORTABLE_VERSIONS = [1, 2, EXPORT_VERSION];
export const EXPORT_PAGE_MAX_RECORDS = 500;
export const IMPORT_BATCH_MAX_RECORDS = 1_000;

// Lower case, so an id derives the same new id however a file spells it.
const RecordId = Id.toLowerCase();
const Count = z.number().int().nonnegative().max(PG_INTEGER_MAX);

export const ExportHeader = z.strictObject({
  type: z.literal('header'),
  format: z.literal(EXPORT_FORMAT),
  version: z.literal(IMPORTABLE_VERSIONS),
  exportedAt: Timestamp,
});
export type ExportHeader = z.infer<typeof ExportHeader>;

export const ExportedConversation = z.strictObject({
  type: z.literal('conversation'),
  id: RecordId,
  isDefault: z.boolean(),
  createdAt: Timestamp,
});

// The user's standing instructions, when they have written some: the line after the header, so
// an import has set them before it checks the file's standing rules against the cap they share.
export const ExportedInstructions = z.strictObject({
  type: z.literal('instructions'),
  text: InstructionsText.min(1),
  updatedAt: Timestamp,
});

// In conversation order.
export const ExportedMessage = z.strictObject({
  type: z.literal('message'),
  id: RecordId,
  conversationId: RecordId,
  role: MessageRole,
  content: z.string().min(1).max(MESSAGE_MAX_CHARS),
  author: z.string().min(1).max(200).nullable(),
  metadata: z.record(z.string(), z.unknown()),
  createdAt: Timestamp,
});

// A rolling summary names the first and last exported message it covers.
export const ExportedSummary = z.strictObject({
  type: z.literal('summary'),
  id: RecordId,
  conversationId: RecordId,
  fromMessageId: RecordId,
  toMessageId: RecordId,
  fromAt: Timestamp,
  toAt: Timestamp,
  content: z.string(),
  createdAt: Timestamp,
});

// Every version, valid or not: an old version points to its successor, so history survives.
export const ExportedFact = z
  .strictObject({
    type: z.literal('fact'),
    id: RecordId,
    category: FactCategory,
    content: FactContent,
    tags: FactTags,
    importance: FactImportance,
    sourceMessageIds: z.array(RecordId).max(FACT_SOURCE_MESSAGES_MAX),
    validFrom: Timestamp,
    validTo: Timestamp.nullable(),
    supersededBy: RecordId.nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  })
  .refine((fact) => fact.supersededBy === null || fact.validTo !== null, {
    message: 'a superseded fact must have validTo',
    path: ['validTo'],
  })
  // A version closed before it began would never have been valid: recall and the history
  // would place it nowhere.
  .refine(
    (fact) => fact.validTo === null || Date.parse(fact.validTo) >= Date.parse(fact.validFrom),
    {
      message: 'validTo must not be before validFrom',
      path: ['validTo'],
    },
  );

// The current version; a deleted file keeps its history.
export const ExportedFile = z.strictObject({
  type: z.literal('file'),
  id: RecordId,
  path: FilePath,
  content: FileContent,
  tags: FileTags,
  metadata: FileMetadata,
  version: z.number().int().min(1).max(PG_INTEGER_MAX),
  createdAt: Timestamp,
  updatedAt: Timestamp,
  deletedAt: Timestamp.nullable(),
});

// A version the file replaced; createdAt is when it was written.
export const ExportedFileVersion = z.strictObject({
  type: z.literal('fileVersion'),
  fileId: RecordId,
  version: z.number().int().min(1).max(PG_INTEGER_MAX),
  content: FileContent,
  tags: FileTags,
  metadata: FileMetadata,
  createdAt: Timestamp,
});

export const ExportedDocument = z.strictObject({
  type: z.literal('document'),
  id: RecordId,
  title: z.string().min(1).max(DOCUMENT_TITLE_MAX_CHARS),
  contentType: DocumentContentType,
  source: z.string().min(1).max(DOCUMENT_SOURCE_MAX_CHARS).nullable(),
  metadata: DocumentMetadata,
  sizeChars: Count,
  chunkCount: Count,
  // A PDF's page count; absent in files from before pages were kept, and for other documents.
  pages: z.number().int().min(1).max(DOCUMENT_PAGES_MAX).optional(),
  createdAt: Timestamp,
});

export const ExportedDocumentChunk = z.strictObject({
  type: z.literal('documentChunk'),
  id: RecordId,
  documentId: RecordId,
  index: Count,
  content: z.string(),
  tokenCount: Count,
  // The page the chunk begins on, when its document has pages.
  page: z.number().int().min(1).max(DOCUMENT_PAGES_MAX).optional(),
  createdAt: Timestamp,
});

// In export and import order: each type refers only to types before it, and the instructions
// come first, to count against the cap before any rule does.
export const ExportRecordType = z.enum([
  'instructions',
  'conversation',
  'message',
  'summary',
  'fact',
  'file',
  'fileVersion',
  'document',
  'documentChunk',
]);
export type ExportRecordType = z.infer<typeof ExportRecordType>;

export const ExportRecord = z.discriminatedUnion(
  'type',
  [
    ExportedInstructions,
    ExportedConversation,
    ExportedMessage,
    ExportedSummary,
    ExportedFact,
    ExportedFile,
    ExportedFileVersion,
    ExportedDocument,
    ExportedDocumentChunk,
  ],
  { error: `type must be one of ${ExportRecordType.options.join(', ')}` },
);
export type ExportRecord = z.infer<typeof ExportRecord>;

// A file of a conversation's or a mission's workspace (what run_code wrote, what the user put
// there), its bytes base64. The tools service keeps these, not memory: they follow the memory's
// records, and an import stores them through tools.workspaces.put, a conversation's in the
// workspace of the conversation the import made. Missions are not exported, so a mission's files
// have nowhere to go on import and are reported as not imported.
export const ExportedWorkspaceFile = z.strictObject({
  type: z.literal('workspaceFile'),
  kind: WorkspaceKind,
  id: RecordId,
  path: WorkspacePath,
  mediaType: z.string().min(1).max(255),
  content: z.base64(),
});
export type ExportedWorkspaceFile = z.infer<typeof ExportedWorkspaceFile>;

// Any line of an export file after its header.
export const ExportFileRecord = z.discriminatedUnion(
  'type',
  [...ExportRecord.options, ExportedWorkspaceFile],
  { error: `type must be one of ${[...ExportRecordType.options, 'workspaceFile'].join(', ')}` },
);
export type ExportFileRecord = z.infer<typeof ExportFileRecord>;

// One line of GET /v1/memory/export and of POST /v1/memory/import: the header first, then records.
export const ExportLine = z.union([ExportHeader, ExportFileRecord]);
export type ExportLine = z.infer<typeof ExportLine>;

// Where the next page starts; only the memory service reads it.
const ExportCursor = z.string().min(1).max(200);

// memory.export.page: the user's records of one type, in order, from after the cursor. A page
// stops at `limit` records or well under the NATS message limit, whichever comes first; `next`
// is absent on the last page.
export const MemoryExportPageRequest = z.object({
  userId: Id,
  type: ExportRecordType,
  after: ExportCursor.optional(),
  limit: z.number().int().min(1).max(EXPORT_PAGE_MAX_RECORDS).default(EXPORT_PAGE_MAX_RECORDS),
});
export type MemoryExportPageRequest = z.input<typeof MemoryExportPageRequest>;
export const MemoryExportPageResponse = z.object({
  records: z.array(ExportRecord),
  next: ExportCursor.optional(),
});
export type MemoryExportPageResponse = z.infer<typeof MemoryExportPageResponse>;
export const memoryExportPage = defineRpc(
  'memory.export.page',
  MemoryExportPageRequest,
  MemoryExportPageResponse,
);

// What an import added; records stored before (the same file again) are not counted.
export const ImportCounts = z.object({
  conversations: Count,
  messages: Count,
  summaries: Count,
  facts: Count,
  files: Count,
  documents: Count,
});
export type ImportCounts = z.infer<typeof ImportCounts>;

// A current standing rule of the file (a fact of category `rule`) that did not fit: with the
// user's standing instructions and the rules they have, it would have passed
// INSTRUCTIONS_TOKEN_CAP, which the API refuses too (the prompt never cuts them). The file's rules
// are taken in order, each that fits. One that does not is stored ended at the import, so it stays
// in its fact's history and in no prompt; `reason` says what PUT /v1/me/instructions says past
// the cap. `id` is the exported id.
export const RuleOverCap = z.object({ id: Id, content: z.string(), reason: z.string() });
export type RuleOverCap = z.infer<typeof RuleOverCap>;

// What an import did with the file's standing instructions. The user's own always stand: a user
// with none takes the file's (`imported`), unless with the rules they have they would pass
// INSTRUCTIONS_TOKEN_CAP, which PUT /v1/me/instructions refuses too (`over-cap`: nothing changes);
// a user with some keeps them, whether the file says the same, ignoring case, spacing and
// punctuation (`same`), or not (`kept-yours`). `none`: the file has no instructions.
export const InstructionsImport = z.enum(['none', 'imported', 'same', 'kept-yours', 'over-cap']);
export type InstructionsImport = z.infer<typeof InstructionsImport>;

// memory.import.records: stores one batch of exported records for the user, in one transaction,
// under ids derived from the user and the exported ids, and indexes them for search. Records may
// refer to records of earlier batches: send the types in order. A current standing rule that says
// what a current rule of the user already says (ignoring case, spacing and punctuation) is stored
// ended, as history, and not counted.
export const MemoryImportRecordsRequest = z.object({
  userId: Id,
  records: z
    .array(ExportRecord)
    .min(1)
    .max(IMPORT_BATCH_MAX_RECORDS)
    .refine((records) => records.filter((record) => record.type === 'instructions').length <= 1, {
      message: 'at most one instructions record',
    }),
});
export type MemoryImportRecordsRequest = z.input<typeof MemoryImportRecordsRequest>;
export const MemoryImportRecordsResponse = z.object({
  imported: ImportCounts,
  rulesOverCap: z.array(RuleOverCap),
  instructions: InstructionsImport,
});
export type MemoryImportRecordsResponse = z.infer<typeof MemoryImportRecordsResponse>;
export const memoryImportRecords = defineRpc(
  'memory.import.records',
  MemoryImportRecordsRequest,
  MemoryImportRecordsResponse,
);

// A workspace file of the import that was not stored: its line, its workspace and path as the file
// names them, and why (over the file size limit or the quota, a mission's, a conversation not in
// the file).
export const NotImportedWorkspaceFile = z.object({
  line: z.number().int().min(1),
  kind: WorkspaceKind,
  id: Id,
  path: z.string(),
  reason: z.string(),
});
export type NotImportedWorkspaceFile = z.infer<typeof NotImportedWorkspaceFile>;

// POST /v1/memory/import's answer: what memory and the workspaces added, the workspace files the
// import could not store, the standing rules it stored ended because they passed the cap, each
// with its line (the rest of the file is imported all the same), and what became of the file's
// standing instructions.
export const MemoryExportImportResponse = z.object({
  imported: ImportCounts.extend({ workspaceFiles: Count }),
  notImported: z.array(NotImportedWorkspaceFile),
  rulesOverCap: z.array(RuleOverCap.extend({ line: z.number().int().min(1) })),
  instructions: InstructionsImport,
});
export type MemoryExportImportResponse = z.infer<typeof MemoryExportImportResponse>;
