import { mkdir } from 'node:fs/promises';
import { createServer, type Socket } from 'node:net';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketHandler, type PGLiteSocketHandlerOptions } from '@electric-sql/pglite-socket';
import { QueryCycleQueue } from './wire-queue';

// Not 5432, so it never clashes with a real Postgres on the same machine.
export const EMBEDDED_POSTGRES_PORT = 54320;

// PGlite has no autovacuum, so nothing would ever ANALYZE: the planner would take every table for
// empty and, in a large memory, scan a user's every row where an index finds five. So the server
// analyzes itself, at most this often and only after use: queries wait while it runs, and once
// a minute keeps that a small share of the time even in a large memory.
const ANALYZE_EVERY_MS = 60_000;

export type EmbeddedPostgresOptions = {
  // Folder holding the database files: it survives restarts.
  dataDir: string;
  host?: string;
  port?: number;
  // How often the planner's statistics are refreshed while the database is in use.
  analyzeEveryMs?: number;
};

export type EmbeddedPostgres = {
  url: string;
  stop(): Promise<void>;
};

export function embeddedPostgresUrl(host: string, port: number): string {
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return `postgres://postgres:postgres@${hostPart}:${port}/postgres?sslmode=disable`;
}

// Postgres with pgvector in WebAssembly, served over the wire protocol (pglite-socket's
// connection handler, with a queue that keeps each connection's query cycle together), so
// services use the same `pg` code as against a real server.
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgres> {
  const host = options.host ?? '127.0.0.1';
  await mkdir(options.dataDir, { recursive: true });
  const db = await PGlite.create({ dataDir: options.dataDir, extensions: { vector } });
  await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
  const queue = new QueryCycleQueue(db);
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
    const handler = new PGLiteSocketHandler({
      // The handler only calls enqueue, getQueueLength, clearQueueForHandler and
      // clearTransactionIfNeeded; its declared type is a class it does not export.
      queryQueue: queue as unknown as PGLiteSocketHandlerOptions['queryQueue'],
      closeOnDetach: true,
    });
    handler.attach(socket).catch(() => socket.destroy());
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? EMBEDDED_POSTGRES_PORT, host, () => resolve());
    });
  } catch (error) {
    // Close the database, or a retry on the same folder would open it a second time.
    await db.close();
    throw error;
  }
  const analyzer = setInterval(() => {
    if (queue.takeActivity()) void queue.runChore('ANALYZE');
  }, options.analyzeEveryMs ?? ANALYZE_EVERY_MS);
  analyzer.unref();
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: embeddedPostgresUrl(host, port),
    async stop() {
      clearInterval(analyzer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await db.close();
    },
  };
}
