import { ChatResponse, ErrorBody } from '@jarvis/contracts';
import { type StackFixture, startStackFixture, waitFor } from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// `make dev`'s database is the embedded Postgres (PGlite) as a process of its own, while the rest
// of the suite may run on PostgreSQL 17 (DATABASE_URL). So this file asks for it: every service
// migrates its schema on it and a turn goes through, and since the stack owns the process, the
// database can go down and come back.

const SCHEMAS = ['gateway', 'memory', 'model_gateway', 'orchestrator', 'scheduler', 'tools'];

describe('the stack on the embedded Postgres', () => {
  let fixture: StackFixture;
  let apiKey: string;

  const chat = (message: string) => fixture.chat(apiKey, { message });

  beforeAll(async () => {
    fixture = await startStackFixture({}, { engine: 'embedded' });
    ({ apiKey } = await fixture.createUser('dana'));
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it("runs every service's migrations and a chat turn on it", async () => {
    const response = await chat('hello');
    expect(response.status).toBe(200);
    const { conversationId } = ChatResponse.parse(await response.json());

    const db = new pg.Client({ connectionString: fixture.stack.databaseUrl });
    await db.connect();
    try {
      const { rows: version } = await db.query<{ version: string }>('SELECT version()');
      const { rows: schemas } = await db.query<{ schema: string }>(
        `SELECT table_schema AS schema FROM information_schema.tables
         WHERE table_name = 'schema_migrations' ORDER BY table_schema`,
      );
      const { rows: messages } = await db.query<{ role: string }>(
        'SELECT role FROM memory.messages WHERE conversation_id = $1 ORDER BY seq',
        [conversationId],
      );
      expect(version[0]?.version).toContain('PGlite');
      expect(schemas.map((row) => row.schema)).toEqual(SCHEMAS);
      expect(messages.map((row) => row.role)).toEqual(['user', 'assistant']);
    } finally {
      await db.end();
    }
  });

  it('answers 503 quickly when the database is down, and recovers when it is back', async () => {
    await fixture.stack.stopService('postgres');
    const started = Date.now();
    const response = await chat('hi');
    expect(response.status).toBe(503);
    expect(ErrorBody.parse(await response.json()).error).toEqual({
      code: 'unavailable',
      message: 'the gateway cannot reach its database',
    });
    expect(Date.now() - started).toBeLessThan(5_000);

    await fixture.stack.startDatabase();
    const recovered = await waitFor(
      async () => {
        const retry = await chat('back?');
        return retry.status === 200 ? retry : undefined;
      },
      { timeoutMs: 20_000, what: 'the stack to recover' },
    );
    expect(recovered.status).toBe(200);
  });
});
