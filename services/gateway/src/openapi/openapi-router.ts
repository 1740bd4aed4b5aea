import { Router } from 'express';
import { parseBody } from '../routes/parse-body';
import { buildOpenApiDocument } from './build-document';
import { DOCS_ASSETS_DIR, DOCS_PAGE_CSP, DOCS_PAGE_HTML, DocsAssetParams } from './docs-page';
import { API_ROUTES } from './route-table';

// /v1/openapi.json and the docs page. They need no key: the document holds no secrets, and the
// API it describes still asks for one.
export function createOpenApiRouter(): Router {
  const router = Router();
  // Built once, at boot: a schema the generator cannot express stops the gateway (and its tests)
  // rather than the first reader of the docs.
  const document = JSON.stringify(buildOpenApiDocument(API_ROUTES));

  router.get('/openapi.json', (_req, res) => {
    res.type('json').send(document);
  });

  router.get('/docs', (_req, res) => {
    res.setHeader('content-security-policy', DOCS_PAGE_CSP);
    res.type('html').send(DOCS_PAGE_HTML);
  });

  router.get('/docs/assets/:file', (req, res) => {
    const { file } = parseBody(DocsAssetParams, req.params);
    // Relative to a root: pnpm's store path has a dot folder (.pnpm) that send refuses otherwise.
    res.sendFile(file, { root: DOCS_ASSETS_DIR });
  });

  return router;
}
