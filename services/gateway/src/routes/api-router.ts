import type { Bus } from '@jarvis/bus';
import { BusError, isConnectionError } from '@jarvis/bus';
import { ENDPOINTS, type Endpoint, type GatewayHandler } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import {
  type NextFunction,
  type Request,
  type RequestHandler,
  type Response,
  Router,
} from 'express';
import { createGuards } from '../middleware/authenticate';
import { allowCors } from '../middleware/cors';
import { jsonBody } from '../middleware/json-body';
import { createRateLimits, type RateLimitDeps } from '../middleware/rate-limit';
import { refuseKeyInUrl } from '../middleware/refuse-key-in-url';
import { createDocsHandlers } from '../openapi/docs-handlers';
import { createAlertsHandlers } from './alerts-handlers';
import { createChatHandlers } from './chat-handlers';
import { createConversationsHandlers } from './conversations-handlers';
import { forwardToBus } from './forward-to-bus';
import { createKeysHandlers } from './keys-handlers';
import { createMeHandlers } from './me-handlers';
import { createMemoryHandlers } from './memory-handlers';
import { createScreenshotsHandlers } from './screenshots-handlers';
import { createWorkspacesHandlers } from './workspaces-handlers';

export type ApiDeps = {
  bus: Bus;
  pool: Pool;
  bodyLimitBytes: number;
  importBodyLimitBytes: number;
  // Largest file POST /v1/memory/documents takes as a form (DOCUMENT_UPLOAD_MAX_BYTES).
  documentUploadMaxBytes: number;
  // Largest file PUT /v1/workspaces/{kind}/{id}/files/{path} takes (WORKSPACE_FILE_MAX_MB).
  workspaceFileMaxBytes: number;
  submitTimeoutMs: number;
  turnTimeoutMs: number;
  rateLimit: RateLimitDeps;
  corsOrigins: string[];
  // Open /v1/events streams per user, across replicas; 0: no limit.
  eventStreamsPerUser: number;
  // The service's: open event streams end on it.
  stopping: AbortSignal;
  // GRAFANA_URL, for the web UI's trace links and alerts' links; unset: none.
  grafanaUrl?: string | undefined;
};

// Express's form of a declared path, relative to /v1, where the router is mounted: a parameter
// that spans several segments is a wildcard (`*name`, which express hands over as the list of
// its segments).
function routePathOf(endpoint: Endpoint): string {
  if (!endpoint.path.startsWith('/v1/')) throw new Error(`${endpoint.path} is not under /v1`);
  return endpoint.path
    .slice('/v1'.length)
    .replace(/\{(\w+)\}/g, (_match, name: string) =>
      name === endpoint.multiSegmentParam ? `*${name}` : `:${name}`,
    );
}

// Every endpoint under /v1, mounted from its declaration in @jarvis/contracts: the guard its
// declared auth asks for, then its handler. Endpoints that only ask a bus contract share one
// handler; the others are named in their declaration and written here.
export function createApiRouter(deps: ApiDeps): Router {
  const router = Router();
  const limits = createRateLimits(deps.rateLimit);
  const guardsFor = createGuards(deps.pool, limits);
  // Bodies are JSON within the general limit; handlers of large bodies parse their own within
  // theirs. An endpoint that declares no body reads none.
  const json = jsonBody(deps.bodyLimitBytes);
  const handlers: Record<GatewayHandler, RequestHandler[]> = {
    ...createChatHandlers({ ...deps, json }),
    ...createConversationsHandlers(deps),
    ...createMemoryHandlers(deps),
    ...createScreenshotsHandlers(deps),
    ...createWorkspacesHandlers(deps),
    ...createKeysHandlers({ ...deps, json }),
    ...createMeHandlers({ ...deps, json, grafanaUrl: deps.grafanaUrl }),
    ...createAlertsHandlers({ bus: deps.bus, json, grafanaUrl: deps.grafanaUrl }),
    ...createDocsHandlers(),
  };

  // Before every endpoint: preflights need no key, and a refused request reads nothing.
  router.use(allowCors(deps.corsOrigins));
  router.use(refuseKeyInUrl);
  for (const endpoint of ENDPOINTS) {
    // The guard comes first, so a request without a valid key costs a header and a key lookup,
    // never the body it carries.
    const handle =
      'forward' in endpoint
        ? [...(endpoint.body ? [json] : []), forwardToBus(deps.bus, endpoint)]
        : handlers[endpoint.handler];
    router[endpoint.method](routePathOf(endpoint), ...guardsFor(endpoint.auth), ...handle);
  }
  // Nothing else answers under /v1, but a request there still shows its key first: without
  // one it is refused as on any endpoint, with one it is counted and answered 404.
  router.use(guardsFor('user'));

  // Typed errors from the services keep their code; the service kit answers them.
  router.use((error: unknown, _req: Request, _res: Response, next: NextFunction) => {
    if (error instanceof BusError) next(new HttpError(error.code, error.message));
    else if (isConnectionError(error)) {
      next(new HttpError('unavailable', 'the gateway cannot reach its database'));
    } else next(error);
  });
  return router;
}
