import { MissionResponse } from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  type FakeReply,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';

// A mission's page with two tasks side by side, each waiting on its own question, against the
// whole stack in Debian's Chromium (./browser.ts): every waiting question has its own answer box,
// which answers that question, and each task shows the tools and skills its plan gave it.

const TASKS = [
  { title: 'Book the hotel', question: 'Which hotel?' },
  { title: 'Book the train', question: 'Which train?' },
];

// Each task asks its own question, then says what it was told.
function answerTask(request: FakeLlmRequest): FakeReply {
  const messages = sentMessages(request);
  const system = messages[0]?.content ?? '';
  if (!system.includes('one task of a mission')) return {};
  const task = TASKS.find((one) => system.includes(`: ${one.title}\n`));
  if (!task) return {};
  const answered = messages.find((message) => message.role === 'tool');
  if (!answered) {
    return { toolCalls: [{ name: 'ask_user', arguments: { question: task.question } }] };
  }
  return { content: `${task.title}: ${answered.content}` };
}

describe("the web UI, a mission's questions", () => {
  let fixture: StackFixture;
  let key: string;
  let browser: BrowserPage;
  let page: Page;

  const api = async (method: string, path: string, body?: unknown) => {
    const response = await fetch(`${fixture.stack.gatewayUrl}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: response.status === 204 ? {} : await response.json() };
  };
  const missionOf = async (id: string) =>
    MissionResponse.parse((await api('GET', `/v1/missions/${id}`)).body).mission;

  beforeAll(async () => {
    fixture = await startStackFixture();
    fixture.fake.onChat(answerTask);
    key = (await fixture.createUser('solveig')).apiKey;
    browser = await openBrowserPage({ locale: 'en-GB' });
    page = browser.page;
    await signIn(page, fixture.stack.gatewayUrl, key);
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('answers each waiting question from its own box, and shows what each task may use', async () => {
    const skill = await api('PUT', '/v1/memory/files/content', {
      path: 'skills/hotel-booking.md',
      content:
        '---\nname: hotel-booking\ndescription: How I book hotels\n---\n1. Near the station.\n',
    });
    expect(skill.status).toBe(200);
    const created = await api('POST', '/v1/missions', {
      objective: 'Book the trip to Bergen',
      tasks: [
        {
          title: 'Book the hotel',
          brief: 'Find a hotel in Bergen.',
          tools: ['memory_search'],
          skills: ['hotel-booking'],
        },
        { title: 'Book the train', brief: 'Find a train to Bergen.' },
      ],
    });
    expect(created.status).toBe(202);
    const { id } = MissionResponse.parse(created.body).mission;
    const waiting = await waitFor(
      async () => {
        const mission = await missionOf(id);
        return mission.questions.length === 2 ? mission : undefined;
      },
      { what: 'both tasks to ask', timeoutMs: 30_000 },
    );
    const numberOf = (taskId: string | undefined) =>
      waiting.tasks.find((task) => task.id === taskId)?.number;
    const [first, second] = waiting.questions;

    await page.goto(`${fixture.stack.gatewayUrl}/missions/${id}`);
    const cardOf = (taskId: string | undefined) =>
      page.getByRole('region', { name: `Jarvis asks you (task ${numberOf(taskId)})` });
    await cardOf(first?.taskId)
      .getByText(first?.text ?? '')
      .waitFor({ timeout: 30_000 });
    await cardOf(second?.taskId)
      .getByText(second?.text ?? '')
      .waitFor();
    await page.getByText('Several tasks wait for you.').waitFor();
    const tasks = page.getByRole('list', { name: 'Tasks' });
    await tasks.getByText('Tools: memory_search · Skills: hotel-booking').waitFor();
    await browser.shoot('mission-questions-desktop');

    // The later question, answered from its own box: the earlier one still waits.
    const later = cardOf(second?.taskId);
    await later.getByLabel('Your answer').fill('The 8:15');
    await later.getByRole('button', { name: 'Send answer' }).click();
    await expect.poll(() => later.count(), { timeout: 10_000 }).toBe(0);
    expect((await missionOf(id)).questions).toEqual([first]);
    const earlier = page.getByRole('region', { name: 'Jarvis asks you' });
    await earlier.getByText(first?.text ?? '').waitFor();

    await page.setViewportSize(PHONE);
    expect(await page.evaluate('document.documentElement.scrollWidth > window.innerWidth')).toBe(
      false,
    );
    await browser.shoot('mission-questions-phone');
    await earlier.getByLabel('Your answer').fill('Near the station');
    await earlier.getByRole('button', { name: 'Send answer' }).click();
    const ended = await waitFor(
      async () => {
        const mission = await missionOf(id);
        return mission.status === 'completed' ? mission : undefined;
      },
      { what: 'the mission to complete', timeoutMs: 30_000 },
    );
    const resultOf = (taskId: string | undefined) =>
      ended.tasks.find((task) => task.id === taskId)?.result ?? '';
    expect(resultOf(second?.taskId)).toContain('{"answer":"The 8:15"}');
    expect(resultOf(first?.taskId)).toContain('{"answer":"Near the station"}');
  });

  it('broke no content security policy and threw no script error', () => {
    expect(browser.unexpectedProblems()).toEqual([]);
  });
});
