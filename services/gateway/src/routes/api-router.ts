import type { Bus } from '@jarvis/bus';
import { BusError, isConnectionError } from '@jarvis/bus';
import { ChatRequest, CreateUserRequest } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import express, { type NextFunction, type Request, type Response, Router } from 'express';
import type { Principal } from '../repositories/users-repository';
import { authenticate, createUser, requireScope } from '../services/api-keys';
import { runChatTurn } from '../services/chat';
import { createApprovalsRouter } from './approvals-router';
import { createConversationsRouter } from './conversations-router';
import { createDocumentsRouter } from './documents-router';
import { createExportRouter } from './export-router';
import { createFactsRouter } from './facts-router';
import { createFilesRouter } from './files-router';
import { createForgetRouter } from './forget-router';
import { createMemoryRouter } from './memory-router';
import { createMissionsRouter } from './missions-router';
import { parseBody } from './parse-body';
import { createRunsRouter } from './runs-router';
import { createUsageRouter } from './usage-router';

export type ApiDeps = {
  bus: Bus;
  pool: Pool;
  bodyLimitBytes: number;
  importBodyLimitBytes: number;
  submitTimeoutMs: number;
  turnTimeoutMs: number;
};

// Routes under /v1. Handlers parse, authorise and delegate; the services hold the logic.
export function createApiRouter(deps: ApiDeps): Router {
  const router = Router();
  // Routes that take large bodies parse them themselves, before the general limit applies.
  router.use('/conversations', createConversationsRouter(deps));
  router.use('/memory/documents', createDocumentsRouter(deps));
  router.use('/memory', createExportRouter(deps));
  router.use(express.json({ limit: deps.bodyLimitBytes }));
  router.use('/memory/files', createFilesRouter(deps));
  router.use('/memory/facts', createFactsRouter(deps));
  router.use('/memory/forget', createForgetRouter(deps));
  router.use('/memory', createMemoryRouter(deps));
  router.use('/usage', createUsageRouter(deps));
  router.use('/runs', createRunsRouter(deps));
  router.use('/approvals', createApprovalsRouter(deps));
  router.use('/missions', createMissionsRouter(deps));

  router.post('/admin/users', async (req, res) => {
    const principal = await authenticate(deps.pool, req.get('authorization'));
    requireScope(principal, 'admin');
    const body = parseBody(CreateUserRequest, req.body);
    res.status(201).json(await createUser(deps.pool, body.name));
  });

  router.post('/chat', async (req, res) => {
    const principal: Principal = await authenticate(deps.pool, req.get('authorization'));
    const body = parseBody(ChatRequest, req.body);
    res.json(
      await runChatTurn(deps.bus, principal.userId, body, {
        submitTimeoutMs: deps.submitTimeoutMs,
        turnTimeoutMs: deps.turnTimeoutMs,
      }),
    );
  });

  // Typed errors from the services keep their code; the service kit answers them.
  router.use((error: unknown, _req: Request, _res: Response, next: NextFunction) => {
    if (error instanceof BusError) next(new HttpError(error.code, error.message));
    else if (isConnectionError(error)) {
      next(new HttpError('unavailable', 'the gateway cannot reach its database'));
    } else next(error);
  });
  return router;
}
