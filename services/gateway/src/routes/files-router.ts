import type { Bus } from '@jarvis/bus';
import {
  FileEditBody,
  FilePathQuery,
  FileReadQuery,
  FileRestoreBody,
  FilesGrepQuery,
  FilesListQuery,
  FilesSearchQuery,
  FileWriteBody,
  memoryFilesDelete,
  memoryFilesEdit,
  memoryFilesGrep,
  memoryFilesHistory,
  memoryFilesList,
  memoryFilesRead,
  memoryFilesRestore,
  memoryFilesSearch,
  memoryFilesWrite,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { parseBody } from './parse-body';

export type FilesRouterDeps = { bus: Bus; pool: Pool };

// The user's memory files, under /v1/memory/files, after JSON body parsing. The user is always
// the key's: the schemas have no userId, and it is set after the parsed input. Typed errors
// from memory are left to the api router's converter.
export function createFilesRouter(deps: FilesRouterDeps): Router {
  const router = Router();

  router.get('/', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(FilesListQuery, req.query);
    res.json(await deps.bus.request(memoryFilesList, { ...query, userId: principal.userId }));
  });

  router.get('/content', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(FileReadQuery, req.query);
    res.json(await deps.bus.request(memoryFilesRead, { ...query, userId: principal.userId }));
  });

  router.put('/content', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(FileWriteBody, req.body);
    res.json(await deps.bus.request(memoryFilesWrite, { ...body, userId: principal.userId }));
  });

  router.patch('/content', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(FileEditBody, req.body);
    res.json(await deps.bus.request(memoryFilesEdit, { ...body, userId: principal.userId }));
  });

  router.delete('/content', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(FilePathQuery, req.query);
    await deps.bus.request(memoryFilesDelete, { ...query, userId: principal.userId });
    res.status(204).end();
  });

  router.get('/history', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(FilePathQuery, req.query);
    res.json(await deps.bus.request(memoryFilesHistory, { ...query, userId: principal.userId }));
  });

  router.post('/restore', async (req, res) => {
    const principal = principalOf(req);
    const body = parseBody(FileRestoreBody, req.body);
    res.json(await deps.bus.request(memoryFilesRestore, { ...body, userId: principal.userId }));
  });

  router.get('/grep', async (req, res) => {
    const principal = principalOf(req);
    const query = parseBody(FilesGrepQuery, req.query);
    res.json(await deps.bus.request(memoryFilesGrep, { ...query, userId: principal.userId }));
  });

  router.get('/search', async (req, res) => {
    const principal = principalOf(req);
    const { q, limit } = parseBody(FilesSearchQuery, req.query);
    res.json(
      await deps.bus.request(memoryFilesSearch, { query: q, limit, userId: principal.userId }),
    );
  });

  return router;
}
