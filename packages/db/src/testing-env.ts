import { z } from 'zod';

// The settings of the test fixtures (testing.ts); the services have env.ts files of their own.
const TestEnv = z.object({
  // A PostgreSQL server (17 with pgvector, as production runs: infra/ci/postgres17.sh) on which
  // each test file makes a database of its own; unset or empty, tests run on the embedded PGlite.
  DATABASE_URL: z
    .string()
    .optional()
    .transform((value) => value || undefined)
    .pipe(z.string().url().optional()),
});

export const testingEnv = TestEnv.parse(process.env);
