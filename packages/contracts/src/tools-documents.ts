import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';
import {
  BLOB_NAME_MAX_CHARS,
  DOCUMENT_SOURCE_MAX_CHARS,
  DOCUMENT_TITLE_MAX_CHARS,
  MemoryDocumentsIngestResponse,
} from './memory-documents';

// A document uploaded as a file (POST /v1/memory/documents, multipart): the gateway streams the
// file into the uploads bucket and asks the tools service, which holds the parsers, to extract
// its text and hand it to memory.

// The JetStream object store (bus blob store) for bytes too large for one NATS message: uploaded
// files, and extracted text on its way to memory (memory.documents.ingest's contentBlob).
export const UPLOADS_BUCKET = 'uploads';
// How long an object lives there if nobody deletes it: every sender deletes what it put once
// answered, so only a crash in between leaves one, and this bounds how long.
export const UPLOADS_TTL_MS = 60 * 60_000;

function isControlCharacter(character: string): boolean {
  const code = character.charCodeAt(0);
  return code < 0x20 || code === 0x7f;
}

// A one-line text: not empty, no control characters (a file name a browser sent, say).
const singleLine = (max: number) =>
  z
    .string()
    .trim()
    .min(1, 'must not be empty')
    .max(max)
    .refine((text) => ![...text].some(isControlCharacter), 'must not contain control characters');

// tools.documents.import: extracts the text of the upload named `upload` (PDF, DOCX, HTML,
// Markdown or text, recognised by its bytes; `declaredType` and the file name's extension must
// agree with them) and ingests it as the user's document. The upload is deleted whatever the
// outcome. bad_request for a file that is corrupt, encrypted, of another type than declared or
// holds no text; payload_too_large for too many pages, a zip bomb or too much text; not_found
// when the upload is gone (expired, or already imported).
export const ToolsDocumentsImportRequest = z.object({
  userId: Id,
  upload: singleLine(BLOB_NAME_MAX_CHARS),
  // As the client named the file: its extension helps tell the type, and it becomes the
  // document's source.
  filename: singleLine(DOCUMENT_SOURCE_MAX_CHARS),
  // The Content-Type the client gave the file, if a specific one.
  declaredType: singleLine(200).optional(),
  // Else the document's own title (a PDF's, a DOCX's, an HTML <title>), else the file name.
  title: singleLine(DOCUMENT_TITLE_MAX_CHARS).optional(),
});
export type ToolsDocumentsImportRequest = z.input<typeof ToolsDocumentsImportRequest>;

export const ToolsDocumentsImportResponse = MemoryDocumentsIngestResponse;
export type ToolsDocumentsImportResponse = MemoryDocumentsIngestResponse;

export const toolsDocumentsImport = defineRpc(
  'tools.documents.import',
  ToolsDocumentsImportRequest,
  ToolsDocumentsImportResponse,
);

// The multipart form of POST /v1/memory/documents, as the OpenAPI document shows it; the gateway
// reads the parts as they stream in (field `file` streamed to the uploads bucket) rather than
// through this schema.
export const DocumentUploadForm = z.strictObject({
  file: z.string().meta({
    format: 'binary',
    description:
      'The file: PDF, DOCX, HTML, Markdown or plain text (UTF-8), recognised by its content.',
  }),
  title: singleLine(DOCUMENT_TITLE_MAX_CHARS).optional().meta({
    description: "The document's title; else its own (PDF, DOCX, HTML), else the file name.",
  }),
});
