import type { Bus } from '@jarvis/bus';
import {
  memoryDocumentsDelete,
  memoryDocumentsGet,
  memoryDocumentsIngest,
  memoryDocumentsList,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  deleteDocument,
  getDocument,
  ingestDocument,
  listDocuments,
} from './services/documents-service';

export function registerDocumentHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryDocumentsIngest, (request) => ingestDocument(pool, request)),
    bus.serve(memoryDocumentsList, (request) => listDocuments(pool, request)),
    bus.serve(memoryDocumentsGet, (request) => getDocument(pool, request)),
    bus.serve(memoryDocumentsDelete, (request) => deleteDocument(pool, request)),
  ];
}
