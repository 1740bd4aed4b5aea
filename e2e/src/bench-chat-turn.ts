import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { SERVICE_NAMES } from '@jarvis/testkit';
import { startStackFixture } from './stack-fixture';

// `make bench`: one chat turn through all six services with the fake LLM (which answers at
// once, so the figure is the stack's own cost), and each service's resident memory at idle.
const TURNS = 200;
const WARM_UP = 20;
const RESULTS = resolve(import.meta.dirname, '../../bench-results/chat-turn.json');

async function residentMegabytes(pid: number | undefined): Promise<number> {
  if (pid === undefined) return Number.NaN;
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kilobytes = Number(status.match(/VmRSS:\s+(\d+)/)?.[1]);
  return Math.round((kilobytes / 1024) * 10) / 10;
}

async function measureMemory(
  fixture: Awaited<ReturnType<typeof startStackFixture>>,
): Promise<Record<string, number>> {
  const entries = await Promise.all(
    SERVICE_NAMES.map(
      async (name) =>
        [name, await residentMegabytes(fixture.stack.process(name)?.child.pid)] as const,
    ),
  );
  return Object.fromEntries(entries);
}

function percentile(sorted: number[], p: number): number {
  const index = Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1);
  return Math.round((sorted[Math.max(index, 0)] ?? Number.NaN) * 100) / 100;
}

const fixture = await startStackFixture();
try {
  const { apiKey } = await fixture.createUser('bench');
  await new Promise((done) => setTimeout(done, 2_000));
  const idleBefore = await measureMemory(fixture);

  const durations: number[] = [];
  for (let turn = 0; turn < WARM_UP + TURNS; turn++) {
    const started = performance.now();
    const response = await fixture.chat(apiKey, { message: `turn ${turn}: how are you?` });
    if (response.status !== 200) throw new Error(`turn ${turn} answered ${response.status}`);
    await response.json();
    if (turn >= WARM_UP) durations.push(performance.now() - started);
  }
  await new Promise((done) => setTimeout(done, 2_000));
  const idleAfter = await measureMemory(fixture);

  const sorted = [...durations].sort((a, b) => a - b);
  const result = {
    date: new Date().toISOString(),
    turns: TURNS,
    chatTurnMs: {
      p50: percentile(sorted, 50),
      p95: percentile(sorted, 95),
      max: percentile(sorted, 100),
    },
    residentMemoryMb: { idleBeforeTurns: idleBefore, idleAfterTurns: idleAfter },
  };
  await mkdir(resolve(RESULTS, '..'), { recursive: true });
  await writeFile(RESULTS, `${JSON.stringify(result, null, 2)}\n`);
  process.stdout.write(`chat turn through all services (fake LLM, ${TURNS} turns):\n`);
  process.stdout.write(`  p50 ${result.chatTurnMs.p50} ms, p95 ${result.chatTurnMs.p95} ms\n`);
  process.stdout.write('resident memory at idle (MB), before -> after the turns:\n');
  for (const name of SERVICE_NAMES) {
    process.stdout.write(`  ${name.padEnd(14)} ${idleBefore[name]} -> ${idleAfter[name]}\n`);
  }
  process.stdout.write(`written to ${RESULTS}\n`);
} finally {
  await fixture.close();
}
