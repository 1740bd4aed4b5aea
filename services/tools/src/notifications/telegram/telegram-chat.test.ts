import { randomUUID } from 'node:crypto';
import {
  type MissionDetail,
  memoryConversationsList,
  memoryFilesRead,
  memoryFilesWrite,
  memoryMessagesList,
  notificationsTelegramLink,
  orchestratorApprovalsList,
  orchestratorMissionsCreate,
  orchestratorMissionsGet,
} from '@jarvis/contracts';
import { admitRequest, userRateWindows } from '@jarvis/service-kit';
import { type FakeLlm, isTurnRequest, sentMessages, startFakeLlm, waitFor } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mapEvent } from '../pipeline/map-event';
import { STAND_IN_BOT } from './bot-api-stand-in';
import { createTelegramSender } from './sender';
import {
  startTelegramFixture,
  type TelegramFixture,
  type TelegramReplica,
} from './telegram-fixture';

// The two-way chat through the real orchestrator, memory and model gateway (each its own
// process), the model the test kit's fake LLM, Telegram the local Bot API stand-in.
let fake: FakeLlm;
let fixture: TelegramFixture;
let replica: TelegramReplica;
const CHAT_PER_MINUTE = 4;

beforeAll(async () => {
  fake = await startFakeLlm();
  fixture = await startTelegramFixture({
    services: ['memory', 'model-gateway', 'orchestrator'],
    env: {
      OPENAI_BASE_URL: fake.openaiBaseUrl,
      OPENAI_API_KEY: 'test-key',
      MODEL_ROUTE_CHAT: 'openai/fake-chat',
      MODEL_ROUTE_UTILITY: 'openai/fake-chat',
      MODEL_ROUTE_EMBED: '',
      MODEL_RETRIES: '0',
    },
  });
  replica = await fixture.startReplica({
    limits: { perMinute: 600, chatPerMinute: CHAT_PER_MINUTE },
  });
}, 120_000);

afterAll(async () => {
  await fixture?.stop();
  await fake?.close();
});

let nextChat = 9_000;
let nextUpdateMessage = 1;

function pushText(chatId: number, text: string): number {
  return fixture.api.pushUpdate({
    message: {
      message_id: nextUpdateMessage++,
      date: Math.floor(Date.now() / 1_000),
      chat: { id: chatId, type: 'private', first_name: 'Amos' },
      from: { id: chatId, is_bot: false, first_name: 'Amos', username: 'amos' },
      text,
    },
  });
}

// The user's reply to one of the bot's messages.
function pushReply(chatId: number, text: string, replyTo: number): number {
  const date = Math.floor(Date.now() / 1_000);
  const chat = { id: chatId, type: 'private' as const, first_name: 'Amos' };
  return fixture.api.pushUpdate({
    message: {
      message_id: nextUpdateMessage++,
      date,
      chat,
      from: { id: chatId, is_bot: false, first_name: 'Amos', username: 'amos' },
      text,
      reply_to_message: {
        message_id: replyTo,
        date,
        chat,
        from: STAND_IN_BOT,
        text: '…',
        reply_to_message: undefined,
      },
    },
  });
}

// The bot's next message to the chat after `after` messages were already sent there.
async function nextMessageTo(chatId: number, after: number, timeoutMs = 30_000) {
  const sent = await fixture.api.waitForCall(
    'sendMessage',
    (body) =>
      String(body.chat_id) === String(chatId) &&
      fixture.api
        .calls('sendMessage')
        .filter((other) => String(other.chat_id) === String(chatId))
        .indexOf(body) >= after,
    timeoutMs,
  );
  return sent;
}

const sentCount = (chatId: number) =>
  fixture.api.calls('sendMessage').filter((body) => String(body.chat_id) === String(chatId)).length;

// A user with a linked chat, whose zone the gateway last told as Europe/Paris.
async function linkedUser() {
  const userId = randomUUID();
  const chatId = nextChat++;
  const { code } = await fixture.client.request(notificationsTelegramLink, {
    userId,
    userTimeZone: 'Europe/Paris',
  });
  const before = sentCount(chatId);
  pushText(chatId, `/start ${code}`);
  expect(String((await nextMessageTo(chatId, before)).text)).toMatch(/^Linked/);
  return { userId, chatId };
}

async function conversation(userId: string) {
  const { defaultConversationId } = await fixture.client.request(memoryConversationsList, {
    userId,
  });
  if (!defaultConversationId) return [];
  const { messages } = await fixture.client.request(memoryMessagesList, {
    userId,
    conversationId: defaultConversationId,
    limit: 50,
  });
  // Newest first, as memory pages them.
  return messages.map((message) => ({ role: message.role, content: message.content })).reverse();
}

describe('Telegram as a chat', () => {
  it("turns a linked chat's message into a turn of the persistent conversation, and sends the reply back", async () => {
    const { userId, chatId } = await linkedUser();
    fake.script({ content: 'Four, since 2 < 3 & "x" is <b>bold</b>.' });
    const before = sentCount(chatId);

    pushText(chatId, 'What is 2 + 2?');
    const reply = await nextMessageTo(chatId, before);

    expect(reply).toEqual({
      chat_id: String(chatId),
      text: 'Four, since 2 &lt; 3 &amp; &quot;x&quot; is &lt;b&gt;bold&lt;/b&gt;.',
      parse_mode: 'HTML',
      link_preview_options: { is_disabled: true },
    });
    // The bot typed while the turn ran.
    expect(fixture.api.calls('sendChatAction')).toContainEqual({
      chat_id: String(chatId),
      action: 'typing',
    });
    expect(await conversation(userId)).toEqual([
      { role: 'user', content: 'What is 2 + 2?' },
      { role: 'assistant', content: 'Four, since 2 < 3 & "x" is <b>bold</b>.' },
    ]);
    const system = sentMessages(fake.requests.findLast(isTurnRequest)).find(
      (message) => message.role === 'system',
    );
    expect(system?.content).toContain('(Europe/Paris, ');
  });

  it("tells the chat when the turn fails, in the orchestrator's words", async () => {
    const { chatId } = await linkedUser();
    fake.onChat(() => ({ status: 400, errorMessage: 'the model refused the request' }));
    const before = sentCount(chatId);

    pushText(chatId, 'Anything?');
    const failed = String((await nextMessageTo(chatId, before)).text);

    expect(failed).toMatch(/^This turn failed: no chat model could answer .*model refused/);
  });

  it('makes one turn of an update Telegram delivers twice', async () => {
    const { userId, chatId } = await linkedUser();
    fake.script({ content: 'Noted once.' });
    const before = sentCount(chatId);
    const update = {
      message: {
        message_id: 777,
        date: Math.floor(Date.now() / 1_000),
        chat: { id: chatId, type: 'private' as const, first_name: 'Amos' },
        from: { id: chatId, is_bot: false, first_name: 'Amos' },
        text: 'Remember the milk',
      },
    };
    const updateId = fixture.api.pushUpdate(update);
    await nextMessageTo(chatId, before);

    // The same update again, as after a poller that died before confirming it: the turn's
    // outcome is told again, and no second turn runs.
    fixture.api.pushUpdate(update, updateId);
    expect(String((await nextMessageTo(chatId, before + 1)).text)).toBe('Noted once.');

    expect(await conversation(userId)).toEqual([
      { role: 'user', content: 'Remember the milk' },
      { role: 'assistant', content: 'Noted once.' },
    ]);
  });

  it('counts its turns in the same windows as POST /v1/chat', async () => {
    const { userId, chatId } = await linkedUser();
    // Turns the user started on the web this minute, through the gateway's windows.
    for (let turn = 0; turn < CHAT_PER_MINUTE; turn++) {
      await admitRequest(
        fixture.redis,
        userRateWindows(
          fixture.namespace,
          userId,
          { perMinute: 600, chatPerMinute: CHAT_PER_MINUTE },
          true,
        ),
        60_000,
        randomUUID(),
      );
    }
    const before = sentCount(chatId);
    const requestsBefore = fake.requests.length;

    pushText(chatId, 'One more?');
    const refused = await nextMessageTo(chatId, before);

    expect(String(refused.text)).toMatch(
      new RegExp(
        `^Rate limit reached: ${CHAT_PER_MINUTE} chat turns per minute; retry in \\d+ s\\.$`,
      ),
    );
    expect(fake.requests.length).toBe(requestsBefore);
    expect(await conversation(userId)).toEqual([]);
  });

  it('decides an approval from its inline buttons, for the linked user only, and sends the run on', async () => {
    const { userId, chatId } = await linkedUser();
    await fixture.client.request(memoryFilesWrite, {
      userId,
      path: 'notes/old.md',
      content: 'old things',
    });
    fake.onChat((request) => {
      if (!isTurnRequest(request)) return { content: '{"operations": []}' };
      const result = sentMessages(request).find((message) => message.role === 'tool');
      if (!result)
        return { toolCalls: [{ name: 'memory_delete', arguments: { path: 'notes/old.md' } }] };
      return { content: result.content.includes('denied') ? 'Kept it.' : 'Deleted.' };
    });
    const before = sentCount(chatId);
    pushText(chatId, 'Delete notes/old.md');
    const asks = await nextMessageTo(chatId, before);
    expect(String(asks.text)).toMatch(/memory_delete/);
    const { approvals } = await fixture.client.request(orchestratorApprovalsList, { userId });
    const approval = approvals[0];
    if (!approval) throw new Error('no pending approval');

    // What the pipeline sends for the approval_requested event.
    await createTelegramSender({ telegram: replica.telegram, pool: fixture.db.pool }).send(
      {
        userId,
        type: 'telegram',
        config: { type: 'telegram', chatId: String(chatId), username: 'amos' },
        secrets: {},
        events: ['approval_request'],
        isConfirmed: true,
        updatedAt: new Date(),
      },
      {
        eventId: randomUUID(),
        kind: 'approval_request',
        occurredAt: new Date().toISOString(),
        title: 'Approve memory_delete?',
        text: 'path: notes/old.md',
        approvalId: approval.id,
      },
      new AbortController().signal,
    );
    const withButtons = await nextMessageTo(chatId, before + 1);
    const keyboard = withButtons.reply_markup as { inline_keyboard: { callback_data: string }[][] };
    const [approve, deny] = keyboard.inline_keyboard[0] ?? [];
    expect(approve?.callback_data).toBe(`approve:${approval.id}`);
    expect(deny?.callback_data).toBe(`deny:${approval.id}`);
    const buttonMessage = {
      message_id: 4242,
      date: Math.floor(Date.now() / 1_000),
      chat: { id: chatId, type: 'private' as const, first_name: 'Amos' },
      text: 'Approve memory_delete?\n\npath: notes/old.md',
    };

    // Someone else pressing it (a forwarded message, a group): refused, nothing decided.
    fixture.api.pushUpdate({
      callback_query: {
        id: 'cb-other',
        from: { id: chatId + 1, is_bot: false, first_name: 'Eve' },
        chat_instance: 'x',
        message: buttonMessage,
        data: `approve:${approval.id}`,
      },
    });
    expect(
      await fixture.api.waitForCall(
        'answerCallbackQuery',
        (body) => body.callback_query_id === 'cb-other',
      ),
    ).toEqual({
      callback_query_id: 'cb-other',
      text: "Only this chat's own user can talk to Jarvis here.",
    });

    fixture.api.pushUpdate({
      callback_query: {
        id: 'cb-owner',
        from: { id: chatId, is_bot: false, first_name: 'Amos' },
        chat_instance: 'x',
        message: buttonMessage,
        data: `approve:${approval.id}`,
      },
    });

    expect(
      await fixture.api.waitForCall(
        'answerCallbackQuery',
        (body) => body.callback_query_id === 'cb-owner',
      ),
    ).toEqual({ callback_query_id: 'cb-owner', text: 'Approved' });
    expect(
      await fixture.api.waitForCall('editMessageText', (body) => body.message_id === 4242),
    ).toEqual({
      chat_id: chatId,
      message_id: 4242,
      text: 'Approve memory_delete?\n\npath: notes/old.md\n\n<b>Approved</b>',
      parse_mode: 'HTML',
      link_preview_options: { is_disabled: true },
    });
    expect(String((await nextMessageTo(chatId, before + 2)).text)).toBe('Deleted.');
    await expect(
      fixture.client.request(memoryFilesRead, { userId, path: 'notes/old.md' }),
    ).rejects.toMatchObject({ code: 'not_found' });
    // Each decision counts once: the edit and answer came only for the owner's press.
    expect(fixture.api.calls('editMessageText')).toHaveLength(1);

    // Deny pressed later (a second phone, an old message): it shows what the approval came to.
    fixture.api.pushUpdate({
      callback_query: {
        id: 'cb-late',
        from: { id: chatId, is_bot: false, first_name: 'Amos' },
        chat_instance: 'x',
        message: buttonMessage,
        data: `deny:${approval.id}`,
      },
    });
    expect(
      await fixture.api.waitForCall(
        'answerCallbackQuery',
        (body) => body.callback_query_id === 'cb-late',
      ),
    ).toEqual({ callback_query_id: 'cb-late', text: 'Approved' });
    const [decided] = (
      await fixture.client.request(orchestratorApprovalsList, { userId, status: 'approved' })
    ).approvals;
    expect(decided?.id).toBe(approval.id);
    // Its edit changes nothing, which Telegram refuses: not an error.
    await waitFor(() => (fixture.api.calls('editMessageText').length === 2 ? true : undefined));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(fixture.lines.filter((line) => line.includes('telegram update failed'))).toEqual([]);
  });

  it("answers a mission's question from a reply to the question's message", async () => {
    const { userId, chatId } = await linkedUser();
    fake.onChat((request) => {
      const messages = sentMessages(request);
      if (!messages[0]?.content.includes('one task of a mission')) return { content: 'Noted.' };
      const answer = messages.find((message) => message.role === 'tool');
      return answer
        ? { content: `Booked by ${answer.content}` }
        : { toolCalls: [{ name: 'ask_user', arguments: { question: 'Train or plane?' } }] };
    });
    const { mission: started } = await fixture.client.request(orchestratorMissionsCreate, {
      userId,
      objective: 'Book the trip to Oslo',
      tasks: [{ title: 'Book the transport', brief: 'Book a train or a plane to Oslo.' }],
    });
    const missionNow = async () =>
      (await fixture.client.request(orchestratorMissionsGet, { userId, id: started.id })).mission;
    const waiting = await waitFor(
      async () => {
        const mission = await missionNow();
        return mission.question ? mission : undefined;
      },
      { timeoutMs: 30_000, what: 'the task to ask' },
    );
    const question = waiting.question;
    if (!question) throw new Error('no question');

    // What the pipeline sends for the mission_question event.
    const mapped = mapEvent(
      {
        type: 'mission_question',
        occurredAt: question.askedAt,
        mission: {
          id: waiting.id,
          objective: waiting.objective,
          status: waiting.status,
          conversationId: waiting.conversationId,
        },
        question: {
          id: question.id,
          taskId: question.taskId,
          text: question.text,
          messageId: randomUUID(),
          expiresAt: question.expiresAt,
        },
      },
      `mission-question:${question.id}`,
      'https://jarvis.example.com',
    );
    if (!mapped) throw new Error('the question makes no notification');
    const before = sentCount(chatId);
    await createTelegramSender({ telegram: replica.telegram, pool: fixture.db.pool }).send(
      {
        userId,
        type: 'telegram',
        config: { type: 'telegram', chatId: String(chatId), username: 'amos' },
        secrets: {},
        events: ['mission_report'],
        isConfirmed: true,
        updatedAt: new Date(),
      },
      mapped.notification,
      new AbortController().signal,
    );
    const asked = await nextMessageTo(chatId, before);
    expect(asked.reply_markup).toEqual({
      force_reply: true,
      input_field_placeholder: 'Your answer',
    });
    expect(String(asked.text)).toContain('Reply to this message to answer it.');
    const askedId = fixture.api.messageIdOf(asked);
    if (askedId === undefined) throw new Error('no message id');

    pushReply(chatId, 'The train.', askedId);

    expect(String((await nextMessageTo(chatId, before + 1)).text)).toBe(
      'I passed your answer on to the mission “Book the trip to Oslo”.',
    );
    const ended: MissionDetail = await waitFor(
      async () => {
        const mission = await missionNow();
        return mission.status === 'completed' ? mission : undefined;
      },
      { timeoutMs: 30_000, what: 'the mission to end' },
    );
    expect(ended.tasks[0]?.result).toBe('Booked by {"answer":"The train."}');
    // The answer went to the question, not into a turn of the conversation.
    expect((await conversation(userId)).map((message) => message.content)).not.toContain(
      'The train.',
    );

    // A second reply to it: the question no longer waits.
    pushReply(chatId, 'The plane, rather.', askedId);
    expect(String((await nextMessageTo(chatId, before + 2)).text)).toBe(
      'This question no longer waits for an answer (answered, expired or cancelled).',
    );
    // A reply to any other message of the bot is a chat message.
    const linked = fixture.api
      .calls('sendMessage')
      .find((body) => String(body.chat_id) === String(chatId));
    const linkedId = linked && fixture.api.messageIdOf(linked);
    if (linkedId === undefined) throw new Error('no message id');
    pushReply(chatId, 'Thanks!', linkedId);
    expect(String((await nextMessageTo(chatId, before + 3)).text)).toBe('Noted.');
  });
});
