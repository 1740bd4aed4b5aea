import { DocsAssetParams, ENDPOINTS, type GatewayHandler } from '@jarvis/contracts';
import type { RequestHandler } from 'express';
import { parseBody } from '../routes/parse-body';
import { DOCS_ASSETS_DIR, DOCS_PAGE_CSP, DOCS_PAGE_HTML } from './docs-page';
import { buildOpenApiDocument } from './openapi-document';

// /v1/openapi.json and the docs page. They need no key: the document holds no secrets, and the
// API it describes still asks for one.
export function createDocsHandlers(): Record<
  Extract<GatewayHandler, 'openApiDocument' | 'docsPage' | 'docsAsset'>,
  RequestHandler[]
> {
  // Built once, at boot: a schema the generator cannot express stops the gateway (and its tests)
  // rather than the first reader of the docs.
  const document = JSON.stringify(buildOpenApiDocument(ENDPOINTS));
  return {
    openApiDocument: [
      (_req, res) => {
        res.type('json').send(document);
      },
    ],
    docsPage: [
      (_req, res) => {
        res.setHeader('content-security-policy', DOCS_PAGE_CSP);
        res.type('html').send(DOCS_PAGE_HTML);
      },
    ],
    docsAsset: [
      (req, res) => {
        const { file } = parseBody(DocsAssetParams, req.params);
        // Relative to a root: pnpm's store path has a dot folder (.pnpm) that send refuses
        // otherwise.
        res.sendFile(file, { root: DOCS_ASSETS_DIR });
      },
    ],
  };
}
