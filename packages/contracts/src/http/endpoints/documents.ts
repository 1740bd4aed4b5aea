import {
  DocumentGetQuery,
  DocumentIdParams,
  DocumentIngestBody,
  DocumentsListQuery,
  MemoryDocumentsGetResponse,
  MemoryDocumentsIngestResponse,
  MemoryDocumentsListResponse,
  memoryDocumentsDelete,
  memoryDocumentsGet,
  memoryDocumentsList,
} from '../../memory-documents';
import { DocumentUploadForm } from '../../tools-documents';
import { type Endpoint, json, multipart } from '../endpoint';

export const DOCUMENTS_ENDPOINTS: Endpoint[] = [
  {
    method: 'post',
    path: '/v1/memory/documents',
    summary: 'Add a document: text as JSON, or a file (PDF, DOCX, HTML, Markdown, text) as a form',
    description:
      'As JSON, text you have as text. As multipart/form-data, a file in the field `file` ' +
      '(up to DOCUMENT_UPLOAD_MAX_BYTES, 25 MiB by default) and an optional `title`: its text ' +
      'is extracted (a PDF keeps its page numbers, which search results carry as ' +
      '`metadata.page`). A file that is corrupt, encrypted, of another type than it says or ' +
      'without text is refused with 400, one too large or with too many pages with 413, and ' +
      'nothing of it is kept.',
    tag: 'documents',
    auth: 'user',
    body: { ...json(DocumentIngestBody), ...multipart(DocumentUploadForm) },
    status: 201,
    response: json(MemoryDocumentsIngestResponse),
    errors: ['timeout'],
    handler: 'ingestDocument',
  },
  {
    method: 'get',
    path: '/v1/memory/documents',
    summary: 'List your documents, newest first',
    tag: 'documents',
    auth: 'user',
    query: DocumentsListQuery,
    status: 200,
    response: json(MemoryDocumentsListResponse),
    errors: ['timeout'],
    forward: { rpc: memoryDocumentsList },
  },
  {
    method: 'get',
    path: '/v1/memory/documents/{id}',
    summary: 'One document with its chunks',
    tag: 'documents',
    auth: 'user',
    params: DocumentIdParams,
    query: DocumentGetQuery,
    status: 200,
    response: json(MemoryDocumentsGetResponse),
    errors: ['not_found', 'timeout'],
    forward: { rpc: memoryDocumentsGet },
  },
  {
    method: 'delete',
    path: '/v1/memory/documents/{id}',
    summary: 'Delete a document and its chunks',
    tag: 'documents',
    auth: 'user',
    params: DocumentIdParams,
    status: 204,
    errors: ['not_found', 'timeout'],
    forward: { rpc: memoryDocumentsDelete },
  },
];
