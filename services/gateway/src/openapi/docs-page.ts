import { createHash } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

// Swagger UI from its npm package, served by the gateway itself: the page loads nothing from a
// CDN, so it works on a server that is offline.
export const DOCS_ASSETS_DIR = path.dirname(
  fileURLToPath(import.meta.resolve('swagger-ui-dist/package.json')),
);

// validatorUrl: null, or Swagger UI sends the document to validator.swagger.io for a badge.
const INIT_SCRIPT = `SwaggerUIBundle({
  url: '/v1/openapi.json',
  dom_id: '#swagger-ui',
  deepLinking: true,
  validatorUrl: null,
});`;

export const DOCS_PAGE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Jarvis API</title>
<link rel="icon" href="data:,">
<link rel="stylesheet" href="/v1/docs/assets/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/v1/docs/assets/swagger-ui-bundle.js"></script>
<script>${INIT_SCRIPT}</script>
</body>
</html>
`;

const INIT_SCRIPT_HASH = createHash('sha256').update(INIT_SCRIPT).digest('base64');

// Replaces the gateway-wide policy on this page only: scripts from this origin plus the one inline
// script by its hash; calls ("Try it out") to this origin only.
export const DOCS_PAGE_CSP = [
  "default-src 'none'",
  `script-src 'self' 'sha256-${INIT_SCRIPT_HASH}'`,
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');
