import { ExportLine, MemoryExportImportResponse } from '../../memory-export';
import {
  ForgetApplyBody,
  ForgetPreviewBody,
  MemoryForgetApplyResponse,
  MemoryForgetPreviewResponse,
  memoryForgetApply,
  memoryForgetPreview,
} from '../../memory-forget';
import { MemorySearchResponse, memorySearch, SearchQuery } from '../../memory-search';
import { type Endpoint, json, ndjson } from '../endpoint';

export const MEMORY_ENDPOINTS: Endpoint[] = [
  {
    method: 'post',
    path: '/v1/memory/search',
    summary: 'Search everything your memory holds',
    tag: 'memory',
    auth: 'user',
    body: json(SearchQuery),
    status: 200,
    response: json(MemorySearchResponse),
    errors: ['timeout'],
    forward: { rpc: memorySearch },
  },
  {
    method: 'get',
    path: '/v1/memory/export',
    summary: 'Your whole memory as JSON Lines',
    description:
      'A header line, then your standing instructions (when you have some), then one record ' +
      'per line; streamed as a download.',
    tag: 'memory',
    auth: 'user',
    status: 200,
    response: ndjson(ExportLine),
    isResponseInputShaped: true,
    errors: ['timeout'],
    handler: 'exportMemory',
  },
  {
    method: 'post',
    path: '/v1/memory/import',
    summary: 'Import an export (JSON Lines) as yours',
    description:
      'Every line is checked first; a bad one answers 400 naming its line, and nothing is ' +
      'imported. The same file imported twice adds nothing. A workspace file that cannot be ' +
      "stored (over the file size limit or the quota, a mission's) is listed in notImported " +
      'and the rest is imported. A current standing rule that would take your standing ' +
      'instructions and rules past their token cap is stored ended (in its history, in no ' +
      'prompt) and listed in rulesOverCap, as the API refuses one past the cap; one you have ' +
      "already, in the same words, is not added again. The file's standing instructions become " +
      'yours only if you have none and they fit the cap; yours are never replaced, and ' +
      'instructions says what the import did. Also accepts Content-Type text/plain.',
    tag: 'memory',
    auth: 'user',
    body: ndjson(ExportLine),
    status: 200,
    response: json(MemoryExportImportResponse),
    errors: ['timeout'],
    handler: 'importMemory',
  },
  {
    method: 'post',
    path: '/v1/memory/forget/preview',
    summary: 'What forgetting by a query would take',
    tag: 'memory',
    auth: 'user',
    body: json(ForgetPreviewBody),
    status: 200,
    response: json(MemoryForgetPreviewResponse),
    errors: ['timeout'],
    forward: { rpc: memoryForgetPreview },
  },
  {
    method: 'post',
    path: '/v1/memory/forget',
    summary: 'Forget facts and messages',
    tag: 'memory',
    auth: 'user',
    body: json(ForgetApplyBody),
    status: 200,
    response: json(MemoryForgetApplyResponse),
    errors: ['timeout'],
    forward: { rpc: memoryForgetApply },
  },
];
