import {
  ChatResponse,
  MemoryMessagesListResponse,
  ScheduleResponse,
  SchedulesListResponse,
  UserEvent,
} from '@jarvis/contracts';
import {
  connectSse,
  type FakeLlmRequest,
  type FakeReply,
  isTurnRequest,
  type SseConnection,
  type StackFixture,
  sentMessages,
  startStackFixture,
} from '@jarvis/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';

// Schedules made in chat, through the whole stack: the model calls schedule_create, the
// scheduler fires the reminder, and it arrives in the conversation and on the user's events.
describe('schedules made in chat', () => {
  let fixture: StackFixture;
  const connections: SseConnection[] = [];

  const api = async (key: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as unknown };
  };
  const chat = async (key: string, body: Record<string, unknown>) => {
    const response = await fixture.chat(key, body);
    expect(response.status).toBe(200);
    return ChatResponse.parse(await response.json());
  };
  const listen = async (key: string) => {
    const connection = await connectSse(`${fixture.stack.gatewayUrl}/v1/events`, {
      headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    });
    connections.push(connection);
    return connection;
  };

  // The turn's model calls schedule_create with `args`, then answers; what the tool answered it
  // is kept in `toolResults`. Background requests (fact extraction) get a plain answer.
  const toolResults: string[] = [];
  const scriptTurn = (args: Record<string, unknown>, reply: string) =>
    fixture.fake.onChat((request: FakeLlmRequest): FakeReply => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const results = sentMessages(request).filter((message) => message.role === 'tool');
      if (results.length === 0) {
        return { toolCalls: [{ name: 'schedule_create', arguments: args }] };
      }
      toolResults.push(String(results.at(-1)?.content));
      return { content: reply };
    });

  beforeAll(async () => {
    fixture = await startStackFixture();
  });

  afterEach(() => {
    for (const connection of connections.splice(0)) connection.close();
    toolResults.splice(0);
  });

  afterAll(async () => {
    await fixture?.close();
  });

  it('"remind me in 2 seconds to stretch": the reminder arrives in the conversation and on /v1/events', async () => {
    const { apiKey } = await fixture.createUser('sam');
    const events = await listen(apiKey);
    scriptTurn({ at: 'in 2 seconds', remind: 'Time to stretch!' }, 'I will remind you.');

    const asked = Date.now();
    const reply = await chat(apiKey, { message: 'remind me in 2 seconds to stretch' });
    const fired = UserEvent.parse(JSON.parse((await events.next(15_000)).data));
    const arrived = Date.now();

    expect(reply.reply.content).toBe('I will remind you.');
    // No zone set yet: the model is told the time is UTC, to say so.
    expect(toolResults[0]).toMatch(/UTC/);
    expect(toolResults[0]).toMatch(/has not set a time zone/);
    expect(fired).toMatchObject({
      type: 'schedule_fired',
      schedule: { kind: 'once', actionType: 'remind', nextRunAt: null },
      run: { status: 'fired', messageId: expect.any(String) },
      conversationId: reply.conversationId,
      text: 'Time to stretch!',
    });
    expect(arrived - asked).toBeGreaterThanOrEqual(2_000);
    const { messages } = MemoryMessagesListResponse.parse(
      (await api(apiKey, 'GET', `/v1/conversations/${reply.conversationId}/messages`)).body,
    );
    const reminder = messages.find((message) => message.content.includes('Time to stretch!'));
    expect(reminder).toMatchObject({ role: 'assistant' });
    expect(fired.type === 'schedule_fired' && fired.run.messageId).toBe(reminder?.id);
    expect(messages.filter((message) => message.content.includes('Time to stretch!'))).toHaveLength(
      1,
    );
    // The schedule has ended, and its history holds the one run.
    const { schedules } = SchedulesListResponse.parse(
      (await api(apiKey, 'GET', '/v1/schedules')).body,
    );
    expect(schedules).toHaveLength(1);
    expect(schedules[0]).toMatchObject({ status: 'ended', createdBy: 'model' });
  });

  it('reads "tomorrow at 9" in the zone the chat gives, and states it in that zone', async () => {
    const { apiKey } = await fixture.createUser('ola');
    scriptTurn({ at: 'tomorrow at 9', remind: 'Call Anna' }, 'Noted.');

    await chat(apiKey, {
      message: 'remind me tomorrow at 9 to call Anna',
      timeZone: 'Europe/Oslo',
    });

    expect(toolResults[0]).toMatch(/09:00 Oslo time/);
    expect(toolResults[0]).not.toMatch(/has not set a time zone/);
    const { schedules } = SchedulesListResponse.parse(
      (await api(apiKey, 'GET', '/v1/schedules')).body,
    );
    const [schedule] = schedules;
    expect(schedule).toMatchObject({
      kind: 'once',
      timeZone: 'Europe/Oslo',
      action: { type: 'remind', text: 'Call Anna' },
      status: 'active',
    });
    const oslo = new Intl.DateTimeFormat('en-GB', {
      timeZone: 'Europe/Oslo',
      hour: '2-digit',
      minute: '2-digit',
      hourCycle: 'h23',
    });
    expect(oslo.format(new Date(schedule?.nextRunAt ?? Number.NaN))).toBe('09:00');
    const got = ScheduleResponse.parse(
      (await api(apiKey, 'GET', `/v1/schedules/${schedule?.id}`)).body,
    );
    expect(got.schedule.id).toBe(schedule?.id);
  });
});
