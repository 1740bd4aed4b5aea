import { createLogger } from '@jarvis/telemetry';
import { waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Election, startElection } from './poller-election';
import { startTelegramFixture, type TelegramFixture } from './telegram-fixture';

let fixture: TelegramFixture;

beforeAll(async () => {
  fixture = await startTelegramFixture();
}, 60_000);

afterAll(async () => {
  await fixture?.stop();
});

// The backend that holds the poller's advisory lock in the test's database.
async function lockHolder(): Promise<number | undefined> {
  const { rows } = await fixture.db.pool.query<{ pid: number }>(
    `SELECT pid FROM pg_locks
      WHERE locktype = 'advisory' AND granted
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`,
  );
  return rows[0]?.pid;
}

describe('the poller election', () => {
  it('elects one replica; another takes over when it stops, or when its lock connection dies', async () => {
    const events: string[] = [];
    const elect = (name: string): Election =>
      startElection({
        databaseUrl: fixture.db.url,
        logger: createLogger('tools', 'silent'),
        retryMs: 100,
        onElected: () => events.push(`${name} elected`),
        onDeposed: async () => {
          events.push(`${name} deposed`);
        },
      });
    const first = elect('a');
    const second = elect('b');
    const elected = () => [first, second].filter((election) => election.isElected());
    try {
      await waitFor(() => (elected().length === 1 ? true : undefined), { what: 'one elected' });
      // Several looks later, still one.
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(elected()).toHaveLength(1);

      // Its lock connection killed (a network cut, a Postgres restart): deposed at once, and the
      // lock is free for whoever asks next.
      const holder = await lockHolder();
      expect(holder).toBeDefined();
      await fixture.db.pool.query('SELECT pg_terminate_backend($1)', [holder]);
      await waitFor(
        () => (events.filter((event) => event.endsWith('deposed')).length === 1 ? true : undefined),
        {
          what: 'the holder deposed',
        },
      );
      await waitFor(() => (elected().length === 1 ? true : undefined), { what: 'a new poller' });
      expect(await lockHolder()).not.toBe(holder);

      // Stopping releases the lock for the other at once.
      const current = elected()[0];
      const other = current === first ? second : first;
      await current?.stop();
      await waitFor(() => (other.isElected() ? true : undefined), { what: 'the other elected' });
      expect(events.filter((event) => event.endsWith('elected'))).toHaveLength(3);
    } finally {
      await first.stop();
      await second.stop();
    }
  });
});

describe('two replicas', () => {
  it('poll one at a time: every message is answered once, also across a change of poller', async () => {
    const one = await fixture.startReplica();
    const two = await fixture.startReplica();
    let chatId = 20_000;
    const ask = async () => {
      const chat = chatId++;
      fixture.api.pushUpdate({
        message: {
          message_id: 1,
          date: Math.floor(Date.now() / 1_000),
          chat: { id: chat, type: 'private', first_name: 'Amos' },
          from: { id: chat, is_bot: false, first_name: 'Amos' },
          text: 'hello?',
        },
      });
      await fixture.api.waitForCall('sendMessage', (body) => body.chat_id === chat);
      return chat;
    };

    const asked = [await ask(), await ask()];
    // The poller's lock connection dies: it stops polling, and one of the two polls again.
    await fixture.db.pool.query('SELECT pg_terminate_backend($1)', [await lockHolder()]);
    await waitFor(
      () =>
        fixture.lines.some((line) => line.includes('telegram poller deposed')) ? true : undefined,
      { what: 'the poller deposed' },
    );
    await waitFor(() => (one.isPolling() || two.isPolling() ? true : undefined), {
      what: 'a poller again',
    });
    asked.push(await ask());
    const polling = [one, two].filter((replica) => replica.isPolling());
    expect(polling).toHaveLength(1);
    const [poller] = polling;
    const other = poller === one ? two : one;
    await poller?.stop();
    asked.push(await ask(), await ask());
    expect(other.isPolling()).toBe(true);
    // Late answers would show up by now.
    await new Promise((resolve) => setTimeout(resolve, 500));

    for (const chat of asked) {
      expect(fixture.api.calls('sendMessage').filter((body) => body.chat_id === chat)).toHaveLength(
        1,
      );
    }
    expect(fixture.api.conflicts()).toBe(0);
    await other.stop();
  });
});
