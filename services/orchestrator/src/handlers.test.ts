import { randomUUID } from 'node:crypto';
import { turnSubmit } from '@jarvis/contracts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerHandlers } from './handlers';
import { ensureTurnQueue, type ServicesFixture, startServicesFixture } from './services-fixture';

// orchestrator.turns.submit over the bus, with memory as its own process. No turn worker runs:
// these tests look at what the submit stores.
let fixture: ServicesFixture;

beforeAll(async () => {
  fixture = await startServicesFixture(['memory']);
  await ensureTurnQueue(fixture.bus);
  registerHandlers({ bus: fixture.bus, pool: fixture.db.pool, redis: fixture.redis });
  await fixture.bus.nc.flush();
});

afterAll(async () => {
  await fixture?.stop();
});

async function storedMessage(id: string) {
  const { rows } = await fixture.db.pool.query<{
    role: string;
    content: string;
    metadata: unknown;
  }>('SELECT role, content, metadata FROM memory.messages WHERE id = $1', [id]);
  return rows[0];
}

describe('orchestrator.turns.submit', () => {
  it("marks the user message of a schedule's prompt with the schedule, and typed text with nothing", async () => {
    const userId = randomUUID();
    const scheduleId = randomUUID();

    const scheduled = await fixture.client.request(turnSubmit, {
      userId,
      turnId: randomUUID(),
      message: 'Brief me on my day',
      timeZone: 'Europe/Oslo',
      scheduleId,
    });
    const typed = await fixture.client.request(turnSubmit, {
      userId,
      turnId: randomUUID(),
      message: 'And the weather?',
    });

    expect(await storedMessage(scheduled.userMessageId)).toEqual({
      role: 'user',
      content: 'Brief me on my day',
      metadata: { scheduleId },
    });
    expect(await storedMessage(typed.userMessageId)).toEqual({
      role: 'user',
      content: 'And the weather?',
      metadata: {},
    });
    expect(typed.conversationId).toBe(scheduled.conversationId);
  });
});
