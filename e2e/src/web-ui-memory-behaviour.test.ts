import {
  MemoryExtractionsListResponse,
  MemoryFactsListResponse,
  MemoryFilesReadResponse,
  MemoryInstructionsResponse,
  MemorySkillsListResponse,
  MissionResponse,
} from '@jarvis/contracts';
import {
  type FakeLlmRequest,
  type FakeReply,
  isTurnRequest,
  type StackFixture,
  sentMessages,
  startStackFixture,
  waitFor,
} from '@jarvis/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BrowserPage, openBrowserPage, PHONE, signIn } from './browser';

// What the user steers memory with in the web UI, against the whole stack in Debian's Chromium
// (./browser.ts): the instructions and standing rules under their shared token cap (Settings),
// the facts a turn taught Jarvis and their undo (Memory › Learned), skills written as memory
// files (Memory › Skills), and a mission task's question answered on the mission's page.

// A phrase of the memory service's extraction prompt: it tells extraction requests apart from
// the chat turns and the other background requests.
const EXTRACTION_PHRASE = 'long-term memory of a personal assistant';
const LEARNED = 'Keeps bees on the roof in Bergen';
const RULE = 'Always give temperatures in Celsius';
const QUESTION = 'Window or aisle seat?';

function isExtractionRequest(request: FakeLlmRequest): boolean {
  return sentMessages(request)[0]?.content.includes(EXTRACTION_PHRASE) ?? false;
}

// A mission task's prompt (it starts as a turn's does, so it is told apart first).
function isTaskRequest(request: FakeLlmRequest): boolean {
  return sentMessages(request)[0]?.content.includes('one task of a mission') ?? false;
}

// The task asks its question, then books with what the tool answered.
function answerTask(request: FakeLlmRequest): FakeReply {
  const answered = sentMessages(request).find((message) => message.role === 'tool');
  if (!answered) return { toolCalls: [{ name: 'ask_user', arguments: { question: QUESTION } }] };
  return { content: `Booked, as answered: ${answered.content}` };
}

describe('the web UI, memory behaviour', () => {
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
  const instructions = async () =>
    MemoryInstructionsResponse.parse((await api('GET', '/v1/me/instructions')).body).instructions;
  const openFacts = async () =>
    MemoryFactsListResponse.parse((await api('GET', '/v1/memory/facts')).body).facts;
  const region = (name: string) => page.getByRole('region', { name, exact: true });

  beforeAll(async () => {
    fixture = await startStackFixture();
    fixture.fake.onChat((request) => {
      if (isTaskRequest(request)) return answerTask(request);
      if (isTurnRequest(request)) return { content: 'Lovely, noted.' };
      if (isExtractionRequest(request)) {
        return {
          content: JSON.stringify({
            operations: [{ op: 'add', content: LEARNED, category: 'fact', importance: 6 }],
          }),
        };
      }
      // Episodes and summaries: the fake's default text.
      return {};
    });
    key = (await fixture.createUser('ingrid')).apiKey;
    browser = await openBrowserPage({ locale: 'en-GB' });
    page = browser.page;
    await signIn(page, fixture.stack.gatewayUrl, key);
  });

  afterAll(async () => {
    await browser?.close();
    await fixture?.close();
  });

  it('saves the instructions and shows the tokens they use of the cap', async () => {
    await page.goto(`${fixture.stack.gatewayUrl}/settings`);
    const part = region('Instructions');
    const meter = part.locator('.token-meter output');
    await expect.poll(() => meter.textContent()).toMatch(/^0 of 1,000 tokens used/);
    await part
      .getByLabel('Your instructions')
      .fill('Answer briefly, in Norwegian when I write it.');
    await part.getByRole('button', { name: 'Save instructions' }).click();
    await part.getByText('Saved.').waitFor();
    const saved = await instructions();
    expect(saved.text).toBe('Answer briefly, in Norwegian when I write it.');
    expect(saved.tokens).toBeGreaterThan(5);
    expect(await meter.textContent()).toMatch(new RegExp(`^${saved.tokens} of 1,000 tokens used`));
    await browser.shoot('instructions-desktop');
  });

  it('adds a standing rule, counted in the same cap, and deletes it', async () => {
    const part = region('Instructions');
    expect((await instructions()).rulesTokens).toBe(0);
    await part.getByLabel('New rule').fill(RULE);
    await part.getByRole('button', { name: 'Add rule' }).click();
    const rules = part.getByRole('list', { name: 'Standing rules' });
    await rules.getByText(RULE).waitFor();
    const withRule = await instructions();
    expect(withRule.rulesTokens).toBeGreaterThan(0);
    await expect
      .poll(() => part.locator('.token-meter output').textContent())
      .toBe(
        `${withRule.tokens + withRule.rulesTokens} of 1,000 tokens used: ${withRule.tokens} by the instructions, ${withRule.rulesTokens} by standing rules`,
      );
    expect((await openFacts()).map((fact) => [fact.category, fact.content])).toContainEqual([
      'rule',
      RULE,
    ]);

    page.once('dialog', (dialog) => void dialog.accept());
    await rules.getByRole('listitem').filter({ hasText: RULE }).getByRole('button').click();
    await expect.poll(() => rules.getByText(RULE).count()).toBe(0);
    expect((await openFacts()).map((fact) => fact.content)).not.toContain(RULE);
    await expect
      .poll(() => part.locator('.token-meter output').textContent())
      .toMatch(new RegExp(`^${withRule.tokens} of 1,000 tokens used`));
  });

  it('says so when the instructions would pass the cap, and keeps what was saved', async () => {
    const part = region('Instructions');
    const before = await instructions();
    // Some 1,600 words of distinct text: well over 1,000 tokens by any count.
    const tooLong = Array.from({ length: 800 }, (_, index) => `rule${index} applies`).join(' ');
    await part.getByLabel('Your instructions').fill(tooLong.slice(0, 8_000));
    await part.getByRole('button', { name: 'Save instructions' }).click();
    const alert = part.getByRole('form', { name: 'Instructions' }).getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('1000');
    expect(await instructions()).toEqual(before);
    await browser.shoot('instructions-over-cap-desktop');
  });

  it('shows what a turn taught Jarvis, and undoes it in one click', async () => {
    expect((await fixture.chat(key, { message: 'I keep bees on my roof in Bergen.' })).status).toBe(
      200,
    );
    await waitFor(
      async () => {
        const { body } = await api('GET', '/v1/memory/extractions');
        return MemoryExtractionsListResponse.parse(body).extractions.find((extraction) =>
          extraction.changes.some((change) => change.text === LEARNED),
        );
      },
      { what: "the turn's extraction", timeoutMs: 30_000 },
    );
    expect((await openFacts()).map((fact) => fact.content)).toContain(LEARNED);

    await page.goto(`${fixture.stack.gatewayUrl}/memory/learned`);
    const item = page
      .getByRole('list', { name: 'Learned' })
      .getByRole('listitem')
      .filter({ hasText: LEARNED })
      .first();
    await item.getByText('added').waitFor();
    await browser.shoot('learned-desktop');
    await item.getByRole('button', { name: 'Undo' }).click();
    await item.getByText(/^undone /).waitFor();
    expect(await item.getByRole('button', { name: 'Undo' }).count()).toBe(0);
    expect((await openFacts()).map((fact) => fact.content)).not.toContain(LEARNED);
    // Twice is refused by the server.
    const { body } = await api('GET', '/v1/memory/extractions');
    const undone = MemoryExtractionsListResponse.parse(body).extractions.find((extraction) =>
      extraction.changes.some((change) => change.text === LEARNED),
    );
    expect((await api('POST', `/v1/memory/extractions/${undone?.id}/undo`)).status).toBe(409);
  });

  it('creates a skill as the memory file skills/<name>.md, and shows a refused one', async () => {
    await page.goto(`${fixture.stack.gatewayUrl}/memory/skills`);
    await page.getByText('No skills yet.', { exact: false }).waitFor();
    await page.getByText('New skill').click();
    const form = page.getByRole('form', { name: 'New skill' });

    // A name the server refuses: its message is shown, and nothing is written.
    await form.getByLabel('Name').fill('Weekly Review');
    await form.getByLabel('Description (one line: when to use it)').fill('Review my week');
    await form.getByLabel('Procedure').fill('1. Read the calendar.');
    await form.getByRole('button', { name: 'Create skill' }).click();
    await form.getByRole('alert').waitFor();
    expect(
      MemorySkillsListResponse.parse((await api('GET', '/v1/memory/skills')).body).skills,
    ).toEqual([]);

    await form.getByLabel('Name').fill('weekly-review');
    await form.getByRole('button', { name: 'Create skill' }).click();
    const skill = page.getByRole('list', { name: 'Skills' }).getByRole('listitem', {
      name: 'weekly-review',
    });
    await skill.getByText('Review my week').waitFor();
    expect(
      MemorySkillsListResponse.parse((await api('GET', '/v1/memory/skills')).body).skills,
    ).toEqual([{ name: 'weekly-review', description: 'Review my week' }]);
    const file = MemoryFilesReadResponse.parse(
      (await api('GET', '/v1/memory/files/content?path=skills/weekly-review.md')).body,
    ).file;
    expect(file.content).toBe(
      '---\nname: weekly-review\ndescription: Review my week\n---\n1. Read the calendar.\n',
    );
    await browser.shoot('skills-desktop');

    // Edited in place: the same file, a new version.
    await skill.getByRole('button', { name: 'Edit' }).click();
    const edit = page.getByRole('form', { name: 'Edit skill weekly-review' });
    await edit.getByLabel('Procedure').fill('1. Read the calendar.\n2. List open loops.');
    await edit.getByRole('button', { name: 'Save skill' }).click();
    await skill.getByRole('button', { name: 'Edit' }).waitFor();
    const edited = MemoryFilesReadResponse.parse(
      (await api('GET', '/v1/memory/files/content?path=skills/weekly-review.md')).body,
    ).file;
    expect(edited.version).toBe(file.version + 1);
    expect(edited.content).toContain('2. List open loops.');
  });

  it("shows a mission task's question, and the answer sent from the page lets it go on", async () => {
    const created = await api('POST', '/v1/missions', {
      objective: 'Book my train to Oslo',
      tasks: [{ title: 'Book the seat', brief: 'Book a seat on the Friday train to Oslo.' }],
    });
    expect(created.status).toBe(202);
    const { id } = MissionResponse.parse(created.body).mission;
    await page.goto(`${fixture.stack.gatewayUrl}/missions/${id}`);
    const card = page.getByRole('region', { name: 'Jarvis asks you' });
    await card.getByText(QUESTION).waitFor({ timeout: 30_000 });
    await page.getByRole('list', { name: 'Tasks' }).getByText('waiting').waitFor();
    await browser.shoot('mission-question-desktop');

    await card.getByLabel('Your answer').fill('Aisle, please');
    await card.getByRole('button', { name: 'Send answer' }).click();
    await expect.poll(() => card.count(), { timeout: 10_000 }).toBe(0);
    const mission = await waitFor(
      async () => {
        const { body } = await api('GET', `/v1/missions/${id}`);
        const detail = MissionResponse.parse(body).mission;
        return detail.status === 'completed' ? detail : undefined;
      },
      { what: 'the mission to complete', timeoutMs: 30_000 },
    );
    expect(mission.question).toBeNull();
    expect(mission.tasks[0]?.result).toContain('Aisle, please');
  });

  it('fits a phone screen', async () => {
    await page.setViewportSize(PHONE);
    for (const path of ['/settings#settings-instructions', '/memory/learned', '/memory/skills']) {
      await page.goto(`${fixture.stack.gatewayUrl}${path}`);
      await page.locator('.card').first().waitFor();
      expect(await page.evaluate('document.documentElement.scrollWidth > window.innerWidth')).toBe(
        false,
      );
    }
    await browser.shoot('skills-phone');
  });

  it('broke no content security policy and threw no script error', () => {
    expect(browser.unexpectedProblems()).toEqual([]);
  });
});
