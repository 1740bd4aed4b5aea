import { z } from 'zod';
import { type Endpoint, json } from '../endpoint';

// The docs page's files, from swagger-ui-dist: these two and no other.
export const DocsAssetParams = z.strictObject({
  file: z.enum(['swagger-ui-bundle.js', 'swagger-ui.css']),
});

export const DOCS_ENDPOINTS: Endpoint[] = [
  {
    method: 'get',
    path: '/v1/openapi.json',
    summary: 'This document',
    tag: 'docs',
    auth: 'none',
    status: 200,
    response: json(z.record(z.string(), z.unknown())),
    handler: 'openApiDocument',
  },
  {
    method: 'get',
    path: '/v1/docs',
    summary: 'This document as a page to read and try the API in',
    tag: 'docs',
    auth: 'none',
    status: 200,
    response: { 'text/html': z.string() },
    handler: 'docsPage',
  },
  {
    method: 'get',
    path: '/v1/docs/assets/{file}',
    summary: "The docs page's script and stylesheet",
    tag: 'docs',
    auth: 'none',
    params: DocsAssetParams,
    status: 200,
    response: { 'text/javascript': z.string(), 'text/css': z.string() },
    handler: 'docsAsset',
  },
];
