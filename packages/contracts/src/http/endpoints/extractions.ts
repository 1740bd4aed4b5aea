import {
  ExtractionIdParams,
  ExtractionsListQuery,
  MemoryExtractionsListResponse,
  MemoryExtractionsUndoResponse,
  memoryExtractionsList,
  memoryExtractionsUndo,
} from '../../memory-extractions';
import { type Endpoint, json } from '../endpoint';

export const EXTRACTIONS_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/memory/extractions',
    summary: 'What Jarvis learned, per turn, newest first',
    tag: 'facts',
    auth: 'user',
    query: ExtractionsListQuery,
    status: 200,
    response: json(MemoryExtractionsListResponse),
    errors: ['timeout'],
    forward: { rpc: memoryExtractionsList },
  },
  {
    method: 'post',
    path: '/v1/memory/extractions/{id}/undo',
    summary: 'Undo what one extraction changed in your facts',
    tag: 'facts',
    auth: 'user',
    params: ExtractionIdParams,
    status: 200,
    response: json(MemoryExtractionsUndoResponse),
    errors: ['not_found', 'conflict', 'timeout'],
    forward: { rpc: memoryExtractionsUndo },
  },
];
