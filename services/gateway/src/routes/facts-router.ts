import type { Bus } from '@jarvis/bus';
import {
  FactIdParams,
  FactRememberBody,
  FactsListQuery,
  FactUpdateBody,
  memoryFactsForget,
  memoryFactsGet,
  memoryFactsList,
  memoryFactsRemember,
  memoryFactsUpdate,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

export type FactsRouterDeps = { bus: Bus; pool: Pool };

// The user's facts, under /v1/memory/facts, after JSON body parsing. The user is always the
// key's: the schemas have no userId, and it is set after the parsed input. Typed errors from
// memory are left to the api router's converter.
export function createFactsRouter(deps: FactsRouterDeps): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(FactsListQuery, req.query);
    res.json(await deps.bus.request(memoryFactsList, { ...query, userId: principal.userId }));
  });

  router.get('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(FactIdParams, req.params);
    res.json(await deps.bus.request(memoryFactsGet, { id, userId: principal.userId }));
  });

  router.post('/', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(FactRememberBody, req.body);
    res
      .status(201)
      .json(await deps.bus.request(memoryFactsRemember, { ...body, userId: principal.userId }));
  });

  router.patch('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(FactIdParams, req.params);
    const body = parseBody(FactUpdateBody, req.body);
    res.json(await deps.bus.request(memoryFactsUpdate, { ...body, id, userId: principal.userId }));
  });

  router.delete('/:id', async (req, res) => {
    const principal = principalOf(req);
    const { id } = parseBody(FactIdParams, req.params);
    res.json(await deps.bus.request(memoryFactsForget, { id, userId: principal.userId }));
  });

  return router;
}
