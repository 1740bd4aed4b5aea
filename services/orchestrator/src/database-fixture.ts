import { migrate } from '@jarvis/db';
import { startTestDatabase, type TestDatabase } from '@jarvis/testkit';

// A test file's own database with the orchestrator's schema migrated, as main.ts leaves it.
export async function startDatabaseFixture(): Promise<TestDatabase> {
  const db = await startTestDatabase();
  await migrate(db.pool, {
    schema: 'orchestrator',
    directory: new URL('../migrations', import.meta.url),
  });
  return db;
}
