import type { Pool } from '@jarvis/db';
import type { Logger } from '@jarvis/telemetry';

// HNSW returns `ef_search` neighbours before filters; search re-ranks 100 candidates of one user,
// so it needs a wider beam, and iterative scans keep looking when other users' rows are filtered
// out (pgvector 0.8).
const SETTINGS = 'SET hnsw.ef_search = 200; SET hnsw.iterative_scan = relaxed_order';

export function configureVectorSearch(pool: Pool, logger: Logger): void {
  pool.on('connect', (client) => {
    client.query(SETTINGS).catch((error: unknown) => {
      logger.warn({ err: error }, 'could not apply vector search settings');
    });
  });
}
