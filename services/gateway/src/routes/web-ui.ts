import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { HttpError } from '@jarvis/service-kit';
import express, { type RequestHandler, Router } from 'express';

// The first path segments of the UI's client-side routes (web/src/router.ts, SECTIONS): a
// reload or a shared link on one of them gets index.html, and the app picks the view. Keep the
// two lists in step; any other path stays the API's JSON 404.
const CLIENT_ROUTES = new Set([
  '',
  'chat',
  'memory',
  'runs',
  'approvals',
  'missions',
  'schedules',
  'settings',
]);

export type WebUiOptions = {
  // The UI's build (web/dist): index.html, assets/ with content-hashed names, and the files of
  // web/public beside them (favicon.svg, manifest.webmanifest, icons/) and sw.js.
  directory: URL | string;
};

function isClientRoute(path: string): boolean {
  return CLIENT_ROUTES.has(path.split('/')[1] ?? '');
}

// Serves the web UI's build. Mounted after every other route, so it answers only what nothing
// else did. The security headers (CSP, nosniff) come from the helmet middleware in front of it:
// the build is one same-origin script and one stylesheet, with nothing inline.
export function createWebUiRouter(options: WebUiOptions): Router {
  const root =
    typeof options.directory === 'string' ? options.directory : fileURLToPath(options.directory);
  const indexFile = join(root, 'index.html');
  const router = Router();

  // Vite names every file under assets/ by a hash of its content: a changed file gets a new
  // URL, so browsers may keep these for a year without asking again.
  router.use(
    '/assets',
    express.static(join(root, 'assets'), {
      index: false,
      immutable: true,
      maxAge: '365d',
      redirect: false,
    }),
  );
  // index.html and the files beside it keep their names across builds: always revalidated
  // (ETag), so a deploy shows at the next load; sw.js too, whose new bytes are how a browser
  // learns of a new app shell. Types come from the extension (text/javascript for sw.js,
  // application/manifest+json for the manifest), as browsers require.
  router.use(
    express.static(root, {
      index: false,
      redirect: false,
      cacheControl: false,
      setHeaders: (res) => res.setHeader('Cache-Control', 'no-cache'),
    }),
  );

  const serveIndex: RequestHandler = (req, res, next) => {
    if ((req.method !== 'GET' && req.method !== 'HEAD') || !isClientRoute(req.path)) {
      next();
      return;
    }
    res.setHeader('Cache-Control', 'no-cache');
    res.sendFile(indexFile, { cacheControl: false }, (error) => {
      if (!error || res.headersSent) return;
      next(
        new HttpError(
          'not_found',
          'the web UI is not built: run `pnpm build` (or `pnpm --filter @jarvis/web-ui build`)',
        ),
      );
    });
  };
  router.use(serveIndex);
  return router;
}
