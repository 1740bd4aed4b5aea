import { execFile } from 'node:child_process';
import { createHmac } from 'node:crypto';
import { readFile, rm, stat } from 'node:fs/promises';
import { createServer, type IncomingHttpHeaders } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { ChatResponse } from '@jarvis/contracts';
import {
  isTurnRequest,
  makeTempDir,
  SERVICE_NAMES,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SCHEMAS = ['gateway', 'orchestrator', 'memory', 'model_gateway', 'scheduler', 'tools'];
const WEBHOOK_SECRET = 'the webhook secret that must survive';
const PASSPHRASE = 'a long enough backup passphrase';

type CliResult = { code: number; stderr: string };

// The backup tool as `make backup` and `make restore` run it for `make dev`.
async function runBackupCli(args: string[], env: Record<string, string>): Promise<CliResult> {
  try {
    const { stderr } = await promisify(execFile)(
      process.execPath,
      ['--import', 'tsx', 'services/gateway/src/backup-cli.ts', ...args],
      { cwd: ROOT, env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } },
    );
    return { code: 0, stderr };
  } catch (error) {
    const failed = error as { code?: number; stderr?: string };
    return { code: failed.code ?? -1, stderr: failed.stderr ?? '' };
  }
}

// Every table of every service schema, with its row count.
async function countRows(db: pg.Pool): Promise<Record<string, number>> {
  const { rows: tables } = await db.query<{ name: string }>(
    `SELECT schemaname || '.' || tablename AS name FROM pg_tables
      WHERE schemaname = ANY($1) ORDER BY 1`,
    [SCHEMAS],
  );
  const counts: Record<string, number> = {};
  for (const { name } of tables) {
    const { rows } = await db.query<{ count: number }>(
      `SELECT count(*)::int AS count FROM ${name}`,
    );
    counts[name] = rows[0]?.count ?? 0;
  }
  return counts;
}

type Hook = { headers: IncomingHttpHeaders; body: string };

describe('a backup of the whole product, restored after a wipe', () => {
  let fixture: StackFixture;
  let dir: { path: string; remove(): Promise<void> };
  // A webhook receiver: the channel's secret, sealed with the tools service's key, must still
  // sign after the restore.
  const hooks: Hook[] = [];
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      hooks.push({ headers: request.headers, body: Buffer.concat(chunks).toString('utf8') });
      response.writeHead(204).end();
    });
  });
  let keyFile: string;

  beforeAll(async () => {
    dir = await makeTempDir('backup-e2e');
    keyFile = join(dir.path, 'secrets', 'secret.key');
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    // The tools service makes its key there on first start, as in an install without
    // JARVIS_SECRET_KEY.
    fixture = await startStackFixture({ JARVIS_SECRET_KEY_FILE: keyFile });
    fixture.fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const said = sentMessages(request).find((message) => message.content.includes('Ana'));
      return { content: said ? 'Your sister is Ana.' : 'Noted.' };
    });
  });

  afterAll(async () => {
    await fixture?.close();
    await dir?.remove();
    receiver.closeAllConnections();
    await new Promise<void>((resolve) => receiver.close(() => resolve()));
  });

  it('finds the conversation, facts, files, documents, workspace files, keys and usage all there, 0 rows lost', async () => {
    const { apiKey } = await fixture.createUser('alice');
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
        method,
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      return { status: response.status, text: await response.text() };
    };

    const first = ChatResponse.parse(
      await (
        await fixture.chat(apiKey, { message: 'Remember that my sister is called Ana' })
      ).json(),
    );
    expect(
      (await call('POST', '/v1/memory/facts', { content: 'The locker code is 4821' })).status,
    ).toBe(201);
    expect(
      (
        await call('PUT', '/v1/memory/files/content', {
          path: 'notes/lisbon.md',
          content: 'Trip in May',
        })
      ).status,
    ).toBe(200);
    const document = await call('POST', '/v1/memory/documents', {
      title: 'Boat manual',
      contentType: 'text/plain',
      content: 'Check the bilge pump before every trip.',
    });
    expect(document.status).toBe(201);
    const documentId = String(JSON.parse(document.text).document.id);
    const reminder = await call('POST', '/v1/schedules', {
      kind: 'once',
      at: new Date(Date.now() + 1_000).toISOString(),
      action: { type: 'remind', text: 'Water the plants' },
    });
    expect(reminder.status).toBe(201);
    // A workspace file (run_code's files, kept in the tools schema) as its raw PUT body.
    const workspaceFile = `/v1/workspaces/conversation/${first.conversationId}/files/data/fares.csv`;
    const stored = await fetch(`${fixture.stack.gatewayUrl}${workspaceFile}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'text/csv' },
      body: 'route,eur\nLIS-OPO,39\n',
    });
    expect(stored.status, await stored.text()).toBe(201);
    const hookUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
    const webhook = await call('PUT', '/v1/notifications/channels/webhook', {
      url: hookUrl,
      secret: WEBHOOK_SECRET,
    });
    expect(webhook.status, webhook.text).toBe(200);
    const scheduleId = String(JSON.parse(reminder.text).schedule.id);
    const scheduleRuns = async () => (await call('GET', `/v1/schedules/${scheduleId}/runs`)).text;
    await waitFor(async () => (await scheduleRuns()).includes('"fired"') || undefined, {
      what: 'the reminder fired',
    });
    // The usage rollup follows the calls over JetStream.
    await waitFor(
      async () => JSON.parse((await call('GET', '/v1/usage')).text).days.length > 0 || undefined,
      { what: "the turn's usage in the rollup", timeoutMs: 30_000 },
    );

    // Services stopped, as `make restore` stops them: nothing writes while the rows are counted.
    await Promise.all(SERVICE_NAMES.map((name) => fixture.stack.stopService(name)));
    const db = new pg.Pool({ connectionString: fixture.stack.databaseUrl, max: 1 });
    try {
      const before = await countRows(db);
      for (const table of [
        'gateway.users',
        'gateway.api_keys',
        'memory.conversations',
        'memory.messages',
        'memory.facts',
        'memory.files',
        'memory.documents',
        'memory.embeddings',
        'orchestrator.runs',
        'model_gateway.usage_daily',
        'scheduler.schedules',
        'scheduler.runs',
        'tools.notification_channels',
        'tools.workspace_files',
      ]) {
        expect(before[table], table).toBeGreaterThan(0);
      }
      const key = await readFile(keyFile);
      const file = join(dir.path, 'jarvis.backup');
      const env = {
        DATABASE_URL: fixture.stack.databaseUrl,
        JARVIS_BACKUP_PASSPHRASE: PASSPHRASE,
        JARVIS_SECRET_KEY_FILE: keyFile,
      };
      // The key beside the secrets it seals is never written in the clear.
      const clear = await runBackupCli(['backup', '--out', join(dir.path, 'clear.backup')], {
        DATABASE_URL: fixture.stack.databaseUrl,
        JARVIS_SECRET_KEY_FILE: keyFile,
      });
      expect(clear.code).toBe(1);
      expect(clear.stderr).toContain('JARVIS_BACKUP_PASSPHRASE');
      const backup = await runBackupCli(['backup', '--out', file], env);
      expect(backup.stderr).toContain('encrypted');
      expect(backup.code).toBe(0);

      for (const schema of SCHEMAS) await db.query(`DROP SCHEMA ${schema} CASCADE`);
      await rm(keyFile);

      const wrong = await runBackupCli(['restore', file], {
        ...env,
        JARVIS_BACKUP_PASSPHRASE: 'not the passphrase at all',
      });
      expect(wrong).toEqual({ code: 1, stderr: `wrong passphrase for ${file}\n` });
      expect(await countRows(db)).toEqual({});

      const restore = await runBackupCli(['restore', file], env);
      expect(restore.code, restore.stderr).toBe(0);
      expect(await countRows(db)).toEqual(before);
      expect(await readFile(keyFile)).toEqual(key);
      expect((await stat(keyFile)).mode & 0o777).toBe(0o600);
    } finally {
      await db.end();
    }

    await Promise.all(SERVICE_NAMES.map((name) => fixture.stack.startService(name)));
    // The same key still opens the same conversation, whose history reaches the model.
    const conversations = await call('GET', '/v1/conversations');
    expect(conversations.status).toBe(200);
    expect(conversations.text).toContain(first.conversationId);
    const facts = await call('GET', '/v1/memory/facts');
    expect(facts.text).toContain('The locker code is 4821');
    expect(facts.text).toContain('Ana');
    expect((await call('GET', '/v1/memory/files/content?path=notes/lisbon.md')).text).toContain(
      'Trip in May',
    );
    expect((await call('GET', `/v1/memory/documents/${documentId}`)).text).toContain('Boat manual');
    expect((await call('GET', workspaceFile)).text).toBe('route,eur\nLIS-OPO,39\n');
    expect((await call('GET', '/v1/usage')).text).toContain('fake-chat');
    expect(await scheduleRuns()).toContain('"fired"');
    const search = await call('POST', '/v1/memory/search', { query: 'bilge pump' });
    expect(search.text).toContain('bilge pump');
    // The webhook's secret opens with the restored key: the test is signed with it.
    const test = await call('POST', '/v1/notifications/test', { channel: 'webhook' });
    expect(test.status, test.text).toBe(200);
    expect(JSON.parse(test.text).delivery).toMatchObject({ channel: 'webhook', status: 'sent' });
    // The reminder went to the webhook too, before the backup: the test's request is the one.
    const hook = hooks.find((received) => JSON.parse(received.body).type === 'test');
    const timestamp = String(hook?.headers['x-jarvis-timestamp']);
    const signature = createHmac('sha256', WEBHOOK_SECRET)
      .update(`${timestamp}.${hook?.body}`)
      .digest('hex');
    expect(hook?.headers['x-jarvis-signature']).toBe(`sha256=${signature}`);

    const again = ChatResponse.parse(
      await (await fixture.chat(apiKey, { message: 'who is my sister?' })).json(),
    );
    expect(again.conversationId).toBe(first.conversationId);
    expect(again.reply.content).toBe('Your sister is Ana.');
  });
});
