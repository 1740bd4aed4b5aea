import type { Bus } from '@jarvis/bus';
import type { Pool } from '@jarvis/db';
import { HttpError } from '@jarvis/service-kit';
import { type Response, Router } from 'express';
import { principalOf } from '../middleware/authenticate';
import { exportMemoryLines } from '../services/memory-export';
import { importMemory } from '../services/memory-import';
import { requestLines } from '../services/request-lines';

export type ExportRouterDeps = { bus: Bus; pool: Pool };

// A whole memory, JSON Lines; far above any other body.
const IMPORT_FILE_LIMIT_BYTES = 64 * 1_024 * 1_024;
const NDJSON_TYPES = ['application/x-ndjson', 'text/plain'];

// Writes that wait while the client reads slower than the export is read; a client that went
// away ends every wait, and the export stops.
function streamTo(res: Response) {
  let isGone = false;
  res.on('close', () => {
    isGone = true;
  });
  return {
    isGone: () => isGone,
    async send(chunk: string): Promise<void> {
      if (isGone || res.write(chunk)) return;
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.on('drain', done);
        res.on('close', done);
      });
    },
  };
}

// GET /v1/memory/export and POST /v1/memory/import. Mounted before the general JSON parser: an
// import body is read here, as lines, with its own limit.
export function createExportRouter(deps: ExportRouterDeps): Router {
  const router = Router();

  router.get('/export', async (req, res) => {
    const principal = principalOf(req);
    const lines = exportMemoryLines(deps.bus, principal.userId);
    // Before any byte is sent, a failure still answers with its own status.
    const first = await lines.next();
    const stream = streamTo(res);
    res.status(200);
    res.setHeader('content-type', 'application/x-ndjson; charset=utf-8');
    res.setHeader('content-disposition', 'attachment; filename="jarvis-memory.jsonl"');
    try {
      if (!first.done) await stream.send(first.value);
      for await (const chunk of lines) {
        if (stream.isGone()) break;
        await stream.send(chunk);
      }
      res.end();
    } catch (error) {
      // The status is out: only a broken connection tells the client the file is incomplete.
      res.destroy();
      throw error;
    }
  });

  // Read line by line as it arrives: a large file is never held whole, and a bad line answers
  // before the rest is sent.
  router.post('/import', async (req, res) => {
    const principal = principalOf(req);
    if (!req.is(NDJSON_TYPES)) {
      throw new HttpError(
        'bad_request',
        'expected an export file with Content-Type: application/x-ndjson',
      );
    }
    const lines = requestLines(req, IMPORT_FILE_LIMIT_BYTES);
    try {
      res.json(await importMemory(deps.bus, principal.userId, lines));
    } catch (error) {
      // Refused before the whole file arrived: the rest of it is not worth receiving.
      if (!req.complete) res.setHeader('Connection', 'close');
      throw error;
    }
  });

  return router;
}
