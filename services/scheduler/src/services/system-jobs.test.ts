import { randomUUID } from 'node:crypto';
import { catchBusError } from '@jarvis/bus/testing';
import {
  isoWeekBounds,
  isoWeekOf,
  memoryEpisodesWeeksPending,
  memoryFilesRead,
  memoryFilesWrite,
  schedulerSchedulesGet,
  schedulerSchedulesList,
} from '@jarvis/contracts';
import { type FakeLlm, startFakeLlm, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type SchedulerFixture, startSchedulerFixture } from '../scheduler-fixture';
import { ensureSystemSchedules, WEEKLY_ROLLUP_SCHEDULE_ID } from './system-jobs';

// The weekly roll-up as a system job: memory and the model-gateway as processes, the model the
// test kit's fake LLM.
let fake: FakeLlm;
let fixture: SchedulerFixture;

beforeAll(async () => {
  fake = await startFakeLlm();
  fixture = await startSchedulerFixture('scheduler-system-jobs', {
    services: ['memory', 'model-gateway'],
    env: {
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'test-key',
      MODEL_ROUTE_CHAT: 'openai/fake-chat',
      MODEL_ROUTE_UTILITY: 'openai/fake-chat',
      MODEL_ROUTE_EMBED: '',
      MODEL_RETRIES: '0',
    },
  });
}, 120_000);

afterAll(async () => {
  await fixture?.stop();
  await fake?.close();
});

const DAY_MS = 24 * 3600_000;
const SUMMARY = {
  title: 'Greenhouse plans',
  topics: ['Building a greenhouse in the garden'],
  outcomes: ['Ordered polycarbonate panels'],
};

// An episode file as memory's extraction worker writes it, at an instant.
async function writeEpisode(userId: string, at: Date, asked: string): Promise<string> {
  const iso = at.toISOString();
  const path = `episodes/${iso.slice(0, 10)}/${iso.slice(11, 13)}${iso.slice(14, 16)}-${randomUUID().slice(0, 8)}.md`;
  const content = `# Run ${randomUUID()}\n\n## The user asked\n${asked}\n\n## Jarvis answered\nNoted.\n`;
  await fixture.clientBus.request(memoryFilesWrite, { userId, path, content, tags: ['episode'] });
  return path;
}

type RunRow = { id: string; status: string; reason: string | null; user_id: string | null };

async function systemRuns(): Promise<RunRow[]> {
  const { rows } = await fixture.db.pool.query<RunRow>(
    'SELECT id, status, reason, user_id FROM scheduler.runs WHERE schedule_id = $1',
    [WEEKLY_ROLLUP_SCHEDULE_ID],
  );
  return rows;
}

function settledRun(what: string): Promise<RunRow> {
  return waitFor(
    async () => {
      const [run, ...more] = await systemRuns();
      if (more.length > 0) throw new Error('more than one run of the roll-up');
      return run && run.status !== 'running' ? run : undefined;
    },
    { timeoutMs: 30_000, what },
  );
}

describe('the weekly roll-up system job', () => {
  it('rolls up last week once per user, and a second delivery of its run writes nothing new', async () => {
    const now = new Date();
    const lastWeek = isoWeekOf(new Date(now.getTime() - 7 * DAY_MS));
    const bounds = isoWeekBounds(lastWeek);
    if (!bounds) throw new Error(`no bounds for ${lastWeek}`);
    const userId = randomUUID();
    const thisWeekOnly = randomUUID();
    const episode = await writeEpisode(
      userId,
      new Date(bounds.start.getTime() + 2 * DAY_MS + 10 * 3600_000),
      'Which panels suit a small greenhouse?',
    );
    // This week is not over: not rolled up.
    await writeEpisode(thisWeekOnly, now, 'What is on today?');

    // Made at every start, once; never a user's.
    await ensureSystemSchedules(fixture.db.pool);
    await ensureSystemSchedules(fixture.db.pool);
    expect(
      await fixture.countRows('SELECT count(*) FROM scheduler.schedules WHERE user_id IS NULL'),
    ).toBe(1);
    expect(
      await catchBusError(
        fixture.clientBus.request(schedulerSchedulesGet, {
          userId,
          id: WEEKLY_ROLLUP_SCHEDULE_ID,
        }),
      ),
    ).toMatchObject({ code: 'not_found' });
    expect((await fixture.clientBus.request(schedulerSchedulesList, { userId })).schedules).toEqual(
      [],
    );

    // Due now, as on a Monday at 03:00: the week before this one is rolled up.
    await fixture.db.pool.query('UPDATE scheduler.schedules SET next_run_at = $2 WHERE id = $1', [
      WEEKLY_ROLLUP_SCHEDULE_ID,
      now,
    ]);
    fake.script({ content: JSON.stringify(SUMMARY) });
    await fixture.startEngine({ maxSleepMs: 300 });

    const fired = await settledRun('the roll-up run');
    expect(fired).toMatchObject({
      status: 'fired',
      user_id: null,
      reason: `${lastWeek}: 1 written, 0 existed, 0 without episodes`,
    });
    expect(fake.chatRequests()).toHaveLength(1);
    const path = `episodes/weeks/${lastWeek}.md`;
    const { file } = await fixture.clientBus.request(memoryFilesRead, { userId, path });
    expect(file.content).toContain(SUMMARY.title);
    expect(file.content).toContain(`](../${episode.slice('episodes/'.length)})`);
    expect(
      await catchBusError(
        fixture.clientBus.request(memoryFilesRead, { userId: thisWeekOnly, path }),
      ),
    ).toMatchObject({ code: 'not_found' });
    // Its cursor moved on to next Monday, 03:00 UTC.
    const { rows } = await fixture.db.pool.query<{ next_run_at: Date }>(
      'SELECT next_run_at FROM scheduler.schedules WHERE id = $1',
      [WEEKLY_ROLLUP_SCHEDULE_ID],
    );
    const next = rows[0]?.next_run_at;
    expect(next?.getUTCDay()).toBe(1);
    expect(next?.toISOString().slice(11)).toBe('03:00:00.000Z');
    expect(next && next > now).toBe(true);

    // As if its process died after the roll-up and before the run was marked: the lease runs
    // out, and the engine delivers the same run again.
    await fixture.db.pool.query(
      `UPDATE scheduler.runs SET status = 'running', reason = NULL, finished_at = NULL,
              lease_until = now() - interval '1 second'
        WHERE id = $1`,
      [fired.id],
    );
    const again = await settledRun('the roll-up run, delivered again');
    expect(again).toMatchObject({
      id: fired.id,
      status: 'fired',
      reason: `${lastWeek}: 0 written, 0 existed, 0 without episodes`,
    });
    expect(fake.chatRequests()).toHaveLength(1);
    const reread = await fixture.clientBus.request(memoryFilesRead, { userId, path });
    expect(reread.file).toEqual(file);
    expect(await fixture.clientBus.request(memoryEpisodesWeeksPending, { week: lastWeek })).toEqual(
      { userIds: [] },
    );
  }, 60_000);
});
