import { mkdir } from 'node:fs/promises';
import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite-pgvector';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';

// Not 5432, so it never clashes with a real Postgres on the same machine.
export const EMBEDDED_POSTGRES_PORT = 54320;

export type EmbeddedPostgresOptions = {
  // Folder holding the database files: it survives restarts.
  dataDir: string;
  host?: string;
  port?: number;
};

export type EmbeddedPostgres = {
  url: string;
  stop(): Promise<void>;
};

export function embeddedPostgresUrl(host: string, port: number): string {
  const hostPart = host.includes(':') ? `[${host}]` : host;
  return `postgres://postgres:postgres@${hostPart}:${port}/postgres?sslmode=disable`;
}

// Postgres with pgvector in WebAssembly, served over the wire protocol, so services use the
// same `pg` code as against a real server. Queries from all connections run one at a time.
export async function startEmbeddedPostgres(
  options: EmbeddedPostgresOptions,
): Promise<EmbeddedPostgres> {
  const host = options.host ?? '127.0.0.1';
  await mkdir(options.dataDir, { recursive: true });
  const db = await PGlite.create({ dataDir: options.dataDir, extensions: { vector } });
  await db.exec('CREATE EXTENSION IF NOT EXISTS vector');
  const server = new PGLiteSocketServer({
    db,
    host,
    port: options.port ?? EMBEDDED_POSTGRES_PORT,
    maxConnections: 200,
  });
  try {
    await server.start();
  } catch (error) {
    // Close the database, or a retry on the same folder would open it a second time.
    await db.close();
    throw error;
  }
  const port = Number(server.getServerConn().split(':').at(-1));
  return {
    url: embeddedPostgresUrl(host, port),
    async stop() {
      await server.stop();
      await db.close();
    },
  };
}
