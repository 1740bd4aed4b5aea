import { createHash } from 'node:crypto';
import { MemorySearchResponse } from '@jarvis/contracts';
import { migrate } from '@jarvis/db';
import { startStackFixture, startTestDatabase, type TestDatabase, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The migrations of the previous release (commit 30531fa), listed rather than taken from git:
// a database as that release left it, bookkeeping without checksums included.
const PREVIOUS_RELEASE: Record<string, { service: string; files: string[] }> = {
  gateway: { service: 'gateway', files: ['001_users.sql', '002_key_names.sql'] },
  orchestrator: {
    service: 'orchestrator',
    files: [
      '001_runs.sql',
      '002_steps.sql',
      '003_approvals.sql',
      '004_time_zone.sql',
      '005_missions.sql',
    ],
  },
  memory: {
    service: 'memory',
    files: [
      '001_messages.sql',
      '002_search.sql',
      '003_files.sql',
      '004_documents.sql',
      '005_facts.sql',
      '006_summaries.sql',
      '007_forget.sql',
      '008_extractions.sql',
      '009_dense.sql',
      '010_index_queue.sql',
      '011_fact_embeddings.sql',
      '012_gin_without_pending_list.sql',
      '013_index_hold.sql',
    ],
  },
  model_gateway: { service: 'model-gateway', files: ['001_usage.sql'] },
  scheduler: { service: 'scheduler', files: ['001_jobs.sql'] },
};

const USER = '00000000-0000-4000-8000-000000000001';
const CONVERSATION = '00000000-0000-4000-8000-000000000002';
const MESSAGE = '00000000-0000-4000-8000-000000000003';
const RUN = '00000000-0000-4000-8000-000000000004';
const REPLY = '00000000-0000-4000-8000-000000000005';
// Alice's key, stored by the previous release as its SHA-256.
const API_KEY = `jv_${'a'.repeat(32)}`;
const SAID = 'My sister adopted a beagle named Biscuit';
// The previous release's sparse vector of SAID (with "Noted." after it as context) and its term
// statistics, from its own stemmer ("sister" was "sist", "named" was "nam").
const OLD_SPARSE =
  '{235450:-0.22580703087115458,377333:0.38601966894078527,409912:0.22580703087115458,' +
  '531495:0.22580703087115458,586231:-0.38601966894078527,772398:0.22580703087115458,' +
  '772493:-0.38601966894078527,903325:-0.38601966894078527,968884:0.22580703087115458,' +
  '1026551:0.38601966894078527}/1048576';
const OLD_TERMS = ['sist', 'adopt', 'beagl', 'nam', 'biscuit'];

function migrationsOf(service: string): URL {
  return new URL(`../../services/${service}/migrations/`, import.meta.url);
}

// What the previous release stored, read back the same way before and after the upgrade.
const CONTENTS = `
  SELECT json_build_object(
    'users', (SELECT json_agg(json_build_object('name', name)) FROM gateway.users),
    'keys', (SELECT json_agg(json_build_object('prefix', prefix, 'name', name)) FROM gateway.api_keys),
    'messages', (SELECT json_agg(json_build_object('seq', seq, 'content', content) ORDER BY seq)
                   FROM memory.messages),
    'facts', (SELECT json_agg(content) FROM memory.facts),
    'files', (SELECT json_agg(json_build_object('path', path, 'content', content)) FROM memory.files),
    'runs', (SELECT json_agg(json_build_object('status', status, 'reply',
                 (SELECT content FROM memory.messages m WHERE m.id = r.reply_message_id)))
               FROM orchestrator.runs r),
    'usage', (SELECT json_agg(json_build_object('tokens', input_tokens, 'cost', cost_usd::text))
                FROM model_gateway.usage_daily)
  ) AS contents`;

describe('upgrading a database from the previous release', () => {
  let database: TestDatabase;

  beforeAll(async () => {
    database = await startTestDatabase();
  });

  afterAll(async () => {
    await database?.stop();
  });

  it('keeps every row the previous release stored, and fills what the new migrations add', async () => {
    const { pool } = database;
    for (const [schema, { service, files }] of Object.entries(PREVIOUS_RELEASE)) {
      await migrate(pool, { schema, directory: migrationsOf(service), only: new Set(files) });
      await pool.query(`ALTER TABLE ${schema}.schema_migrations DROP COLUMN checksum`);
    }
    await pool.query(`INSERT INTO gateway.users (id, name) VALUES ($1, 'alice')`, [USER]);
    await pool.query(
      `INSERT INTO gateway.api_keys (id, user_id, prefix, key_hash, scope, name)
       VALUES (gen_random_uuid(), $1, 'jv_aaaaaaaa', $2, 'user', 'laptop')`,
      [USER, createHash('sha256').update(API_KEY).digest('hex')],
    );
    await pool.query(
      `INSERT INTO memory.conversations (id, user_id, is_default) VALUES ($2, $1, true)`,
      [USER, CONVERSATION],
    );
    await pool.query(
      `INSERT INTO memory.messages (id, user_id, conversation_id, role, content, created_at)
       VALUES ($3, $1, $2, 'user', $4, '2026-11-01T10:00:00Z'),
              ($5, $1, $2, 'assistant', 'Noted.', '2026-11-01T10:00:01Z')`,
      [USER, CONVERSATION, MESSAGE, SAID, REPLY],
    );
    // The message as the previous release indexed it: its sparse vector and term statistics.
    await pool.query(
      `INSERT INTO memory.embeddings (item_kind, item_id, model, user_id, conversation_id,
                                      item_created_at, sparse)
       VALUES ('message', $3, 'local-sparse-v1', $1, $2, '2026-11-01T10:00:00Z', $4)`,
      [USER, CONVERSATION, MESSAGE, OLD_SPARSE],
    );
    await pool.query(
      `INSERT INTO memory.term_stats (user_id, term, items) SELECT $1, unnest($2::text[]), 1`,
      [USER, OLD_TERMS],
    );
    await pool.query('INSERT INTO memory.item_counts (user_id, items) VALUES ($1, 1)', [USER]);
    await pool.query(
      `INSERT INTO memory.facts (id, user_id, content) VALUES (gen_random_uuid(), $1, 'Sister: Ana')`,
      [USER],
    );
    await pool.query(
      `INSERT INTO memory.files (id, user_id, path, content)
       VALUES (gen_random_uuid(), $1, 'notes/lisbon.md', 'Trip in May')`,
      [USER],
    );
    await pool.query(
      `INSERT INTO orchestrator.runs (id, turn_id, user_id, conversation_id, user_message_id,
                                      status, reply_message_id, reply_content, created_at)
       VALUES ($4, gen_random_uuid(), $1, $2, $3, 'completed', $5, 'Noted.',
               '2026-11-01T10:00:00Z')`,
      [USER, CONVERSATION, MESSAGE, RUN, REPLY],
    );
    await pool.query(
      `INSERT INTO model_gateway.usage_daily (day, user_id, provider, model, purpose,
                                              input_tokens, cost_usd, requests)
       VALUES ('2026-11-01', $1, 'openai', 'gpt', 'chat', 1200, 0.012345678, 1)`,
      [USER],
    );
    const before = (await pool.query(CONTENTS)).rows[0];
    expect(Object.values(before.contents).every((rows) => Array.isArray(rows))).toBe(true);

    const upgraded: Record<string, string[]> = {};
    for (const [schema, { service }] of Object.entries(PREVIOUS_RELEASE)) {
      upgraded[schema] = await migrate(pool, { schema, directory: migrationsOf(service) });
    }

    // The scheduler's 002 drops its jobs table, which no release ever wrote to.
    expect(upgraded).toEqual({
      gateway: ['003_time_zone.sql'],
      orchestrator: [
        '006_turn_submissions.sql',
        '007_reply_in_memory.sql',
        '008_mission_idempotency.sql',
        '009_run_schedule.sql',
        '010_mission_trace.sql',
        '011_mission_questions.sql',
        '012_mission_task_skills.sql',
        '013_question_answered_by.sql',
      ],
      memory: [
        '014_import_batches.sql',
        '015_postgres_terms.sql',
        '016_episode_paths.sql',
        '017_document_pages.sql',
        '018_instructions_and_rules.sql',
        '019_extraction_turns.sql',
      ],
      model_gateway: [],
      scheduler: ['002_schedules.sql', '003_system_jobs.sql'],
    });
    expect((await pool.query(CONTENTS)).rows[0]).toEqual(before);
    // The new migration's data step: the run takes its message's time as its place in line.
    const run = await pool.query(
      'SELECT user_message_at = created_at AS "isFilled" FROM orchestrator.runs WHERE id = $1',
      [RUN],
    );
    expect(run.rows).toEqual([{ isFilled: true }]);
    // Every migration, old and new, now has its checksum.
    for (const schema of Object.keys(PREVIOUS_RELEASE)) {
      const missing = await pool.query(
        `SELECT name FROM ${schema}.schema_migrations WHERE checksum IS NULL`,
      );
      expect(missing.rows, schema).toEqual([]);
    }
    // The term statistics are counted again with the terms Postgres' text search gives.
    const terms = await pool.query<{ term: string }>(
      'SELECT term FROM memory.term_stats WHERE user_id = $1 AND items = 1 ORDER BY term',
      [USER],
    );
    expect(terms.rows.map((row) => row.term)).toEqual([
      'adopt',
      'beagl',
      'biscuit',
      'name',
      'sister',
    ]);
  });

  it('finds what the previous release stored, its sparse vector embedded again', async () => {
    const { pool } = database;
    const fixture = await startStackFixture({}, { databaseUrl: database.url });
    try {
      // Memory re-embeds the old vectors in the background after it starts.
      await waitFor(
        async () => {
          const { rows } = await pool.query<{ count: string }>(
            'SELECT count(*) FROM memory.sparse_reembed_queue',
          );
          return rows[0]?.count === '0' ? true : undefined;
        },
        { timeoutMs: 30_000, what: 'the re-embed queue to empty' },
      );
      const { rows } = await pool.query<{ sparse: string }>(
        'SELECT sparse::text FROM memory.embeddings WHERE item_id = $1',
        [MESSAGE],
      );
      expect(rows[0]?.sparse).not.toBe(OLD_SPARSE);

      const response = await fetch(`${fixture.stack.gatewayUrl}/v1/memory/search`, {
        method: 'POST',
        headers: { authorization: `Bearer ${API_KEY}`, 'content-type': 'application/json' },
        body: JSON.stringify({ query: "What is the name of my sister's dog?", limit: 3 }),
      });
      expect(response.status).toBe(200);
      const { results } = MemorySearchResponse.parse(await response.json());
      expect(results[0]?.text).toBe(SAID);
    } finally {
      await fixture.close();
    }
  });
});
