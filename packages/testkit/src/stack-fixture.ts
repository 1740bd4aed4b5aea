import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { CreateUserResponse } from '@jarvis/contracts';
import { type FakeLlm, startFakeLlm } from './fake-llm';
import {
  defaultTestDatabaseEngine,
  makeTempDir,
  NATS_URL,
  REDIS_URL,
  startTestDatabase,
  type TestDatabaseEngine,
  uniqueNamespace,
} from './infra';
import { Stack } from './stack';

export type StackFixture = {
  stack: Stack;
  fake: FakeLlm;
  adminKey: string;
  createUser(name: string): Promise<CreateUserResponse>;
  chat(apiKey: string, body: unknown): Promise<Response>;
  close(): Promise<void>;
};

export type StackFixtureOptions = {
  // A database the benches were given, used as it is; tests never share one.
  databaseUrl?: string | undefined;
  // Which engine holds the stack's fresh database when no databaseUrl is given: by default the
  // server at DATABASE_URL (a database of its own, dropped on close) when it is set, otherwise
  // the embedded Postgres as its own process, as `make dev` runs it.
  engine?: TestDatabaseEngine;
  cpuProfileDir?: string | undefined;
};

// The whole product as a user runs it: six service processes, a database of its own, the
// machine's NATS and Redis, and the fake LLM behind the OpenAI-compatible provider.
export async function startStackFixture(
  extraEnv: Record<string, string> = {},
  options: StackFixtureOptions = {},
): Promise<StackFixture> {
  const engine = options.engine ?? defaultTestDatabaseEngine();
  const database =
    !options.databaseUrl && engine === 'server'
      ? await startTestDatabase({ engine: 'server' })
      : undefined;
  const databaseUrl = options.databaseUrl ?? database?.url;
  const fake = await startFakeLlm();
  const dataDir = await makeTempDir('e2e');
  const adminKey = `admin-${randomBytes(24).toString('hex')}`;
  const stack = new Stack({
    // Laid out as make dev's .data: the embedded Postgres, and the tools service's key file.
    dataDir: join(dataDir.path, 'postgres'),
    ...(databaseUrl ? { databaseUrl } : {}),
    // Each service writes its CPU profile there when it stops.
    ...(options.cpuProfileDir
      ? { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] }
      : {}),
    env: {
      NATS_URL,
      REDIS_URL,
      NATS_NAMESPACE: uniqueNamespace('e2e'),
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'test-key',
      // Claude's models are routed only with a key, which a test sets when it wants them.
      ANTHROPIC_BASE_URL: fake.url,
      MODEL_ROUTE_CHAT: 'openai/fake-chat',
      MODEL_ROUTE_UTILITY: 'openai/fake-chat',
      // The default embed route (Ollama), which nothing serves here: dense search stays off and
      // memory searches with its built-in sparse vectors, as an install without Ollama does.
      MODEL_ROUTE_EMBED: '',
      JARVIS_ADMIN_KEY: adminKey,
      // The pages tests serve to web_fetch are on loopback.
      OUTBOUND_ALLOWED_HOSTS: '127.0.0.1',
      // Made by the tools service's first start, as in an install without JARVIS_SECRET_KEY.
      JARVIS_SECRET_KEY_FILE: join(dataDir.path, 'secret.key'),
      LOG_LEVEL: 'warn',
      ...extraEnv,
    },
    ...(process.env.JARVIS_TEST_LOGS
      ? { onLine: (name: string, line: string) => process.stdout.write(`${name} | ${line}\n`) }
      : {}),
  });
  try {
    await stack.start();
  } catch (error) {
    await database?.stop();
    await fake.close();
    await dataDir.remove();
    throw error;
  }

  const post = (path: string, apiKey: string, body: unknown) =>
    fetch(`${stack.gatewayUrl}${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  return {
    stack,
    fake,
    adminKey,
    async createUser(name) {
      const response = await post('/v1/admin/users', adminKey, { name });
      if (response.status !== 201) throw new Error(`create user: ${response.status}`);
      return CreateUserResponse.parse(await response.json());
    },
    chat: (apiKey, body) => post('/v1/chat', apiKey, body),
    async close() {
      await stack.stop();
      await database?.stop();
      await fake.close();
      await dataDir.remove();
    },
  };
}
