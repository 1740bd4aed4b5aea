import type { Bus } from '@jarvis/bus';
import { BusError, isConnectionError } from '@jarvis/bus';
import type { Pool } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import { type NextFunction, type Request, type Response, Router } from 'express';
import { authenticateRequests } from '../middleware/authenticate';
import { allowCors } from '../middleware/cors';
import { jsonBody } from '../middleware/json-body';
import { createRateLimits, type RateLimitDeps } from '../middleware/rate-limit';
import { refuseKeyInUrl } from '../middleware/refuse-key-in-url';
import { createOpenApiRouter } from '../openapi/openapi-router';
import { createAdminRouter } from './admin-router';
import { createApprovalsRouter } from './approvals-router';
import { createChatRouter } from './chat-router';
import { createConversationsRouter } from './conversations-router';
import { createDocumentsRouter } from './documents-router';
import { createEventsRouter } from './events-router';
import { createExportRouter } from './export-router';
import { createFactsRouter } from './facts-router';
import { createFilesRouter } from './files-router';
import { createForgetRouter } from './forget-router';
import { createKeysRouter } from './keys-router';
import { createMemoryRouter } from './memory-router';
import { createMissionsRouter } from './missions-router';
import { createRunsRouter } from './runs-router';
import { createTurnsRouter } from './turns-router';
import { createUsageRouter } from './usage-router';

export type ApiDeps = {
  bus: Bus;
  pool: Pool;
  bodyLimitBytes: number;
  importBodyLimitBytes: number;
  submitTimeoutMs: number;
  turnTimeoutMs: number;
  rateLimit: RateLimitDeps;
  corsOrigins: string[];
  // Open /v1/events streams per user, across replicas; 0: no limit.
  eventStreamsPerUser: number;
  // The service's: open event streams end on it.
  stopping: AbortSignal;
};

// Routes under /v1. Handlers parse, authorise and delegate; the services hold the logic.
export function createApiRouter(deps: ApiDeps): Router {
  const router = Router();
  const limits = createRateLimits(deps.rateLimit);
  // Before every route: preflights need no key, and a refused or limited request reads nothing.
  router.use(allowCors(deps.corsOrigins));
  router.use(refuseKeyInUrl);
  router.use(createOpenApiRouter());
  // Every route below needs a key, so it is checked before anything reads a body.
  router.use(authenticateRequests(deps.pool, limits.countUnauthenticated));
  router.use(limits.limitPerUser);
  // Routes that take large bodies parse them themselves, before the general limit applies.
  router.use('/conversations', createConversationsRouter(deps));
  router.use('/memory/documents', createDocumentsRouter(deps));
  router.use('/memory', createExportRouter(deps));
  router.use(jsonBody(deps.bodyLimitBytes));
  router.use('/memory/files', createFilesRouter(deps));
  router.use('/memory/facts', createFactsRouter(deps));
  router.use('/memory/forget', createForgetRouter(deps));
  router.use('/memory', createMemoryRouter(deps));
  router.use('/usage', createUsageRouter(deps));
  router.use('/runs', createRunsRouter(deps));
  router.use('/approvals', createApprovalsRouter(deps));
  router.use('/missions', createMissionsRouter(deps));
  router.use('/keys', createKeysRouter(deps));
  router.use('/admin', createAdminRouter(deps));
  router.use('/chat', createChatRouter(deps));
  router.use('/turns', createTurnsRouter(deps));
  router.use('/events', createEventsRouter(deps));

  // Typed errors from the services keep their code; the service kit answers them.
  router.use((error: unknown, _req: Request, _res: Response, next: NextFunction) => {
    if (error instanceof BusError) next(new HttpError(error.code, error.message));
    else if (isConnectionError(error)) {
      next(new HttpError('unavailable', 'the gateway cannot reach its database'));
    } else next(error);
  });
  return router;
}
