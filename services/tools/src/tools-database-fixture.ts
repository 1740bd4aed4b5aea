import { migrate } from '@jarvis/db';
import { startTestDatabase, type TestDatabase } from '@jarvis/testkit';

// A fresh database with the tools schema migrated, as the service has it after its start.
export async function startToolsDatabase(): Promise<TestDatabase> {
  const database = await startTestDatabase();
  await migrate(database.pool, {
    schema: 'tools',
    directory: new URL('../migrations', import.meta.url),
  });
  return database;
}
