import type { Bus } from '@jarvis/bus';
import {
  ApprovalDecisionBody,
  ApprovalIdParams,
  ApprovalsListQuery,
  orchestratorApprovalsDecide,
  orchestratorApprovalsGet,
  orchestratorApprovalsList,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { awaitTurnOutcome, toChatResponse } from '../services/chat';
import { parseBody } from './parse-body';

export type ApprovalsRouterDeps = { bus: Bus; pool: Pool; turnTimeoutMs: number };

// /v1/approvals: the risky tool calls waiting for the key's user, and their decisions. A
// decision answers like POST /v1/chat: with the reply of the run it let go on.
export function createApprovalsRouter(deps: ApprovalsRouterDeps): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(ApprovalsListQuery, req.query);
    res.json(
      await deps.bus.request(orchestratorApprovalsList, { ...query, userId: principal.userId }),
    );
  });

  router.post('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(ApprovalIdParams, req.params);
    const { decision } = parseBody(ApprovalDecisionBody, req.body);
    const userId = principal.userId;
    const { approval } = await deps.bus.request(orchestratorApprovalsGet, { userId, id });
    let decided = approval;
    const event = await awaitTurnOutcome(
      deps.bus,
      approval.turnId,
      deps.turnTimeoutMs,
      async () => {
        decided = (await deps.bus.request(orchestratorApprovalsDecide, { userId, id, decision }))
          .approval;
      },
    );
    res.json({ ...toChatResponse(event), decided });
  });

  return router;
}
