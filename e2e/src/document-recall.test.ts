import { ChatResponse, MemoryDocumentsIngestResponse } from '@jarvis/contracts';
import {
  isTurnRequest,
  makePdf,
  type StackFixture,
  sentMessages,
  startStackFixture,
} from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

// The agent answers from an uploaded PDF and can say where it read it: a chat turn about a
// subject on the PDF's third page reaches the model with that page's chunk among the memories,
// named by the document's title and its page.

let fixture: StackFixture;
let key: string;

beforeAll(async () => {
  fixture = await startStackFixture();
  key = (await fixture.createUser('reader')).apiKey;
});

afterAll(async () => {
  await fixture?.close();
});

// Plain sentences, as a manual's pages hold (made-up tokens such as "p3w17" would cost the model
// four times the tokens of words, and crowd the passage out of the prompt), the subject in the
// middle of the page.
const FILLER = [
  'Check the valves and clean the filters before winter comes.',
  'Keep the room around the unit dry and free of dust.',
  'Read the gauge each month and note what it shows.',
  'Call a qualified engineer when a warning light stays on.',
];

function pageText(page: number, subject: string): string {
  const lines = Array.from(
    { length: 36 },
    (_, line) => `Page ${page}, note ${line + 1}: ${FILLER[line % FILLER.length]}`,
  );
  lines[18] = subject;
  return lines.join('\n');
}

describe('a question about an uploaded PDF', () => {
  it("reaches the model with the passage, the document's title and the page it is on", async () => {
    const pdf = await makePdf({
      title: 'Boiler manual',
      pages: [
        pageText(1, 'Thermostat settings.'),
        pageText(2, 'Pressure gauge readings.'),
        pageText(3, 'Descaling the heat exchanger yearly with citric acid.'),
      ],
    });
    const form = new FormData();
    form.append('file', new Blob([pdf], { type: 'application/pdf' }), 'boiler.pdf');
    const uploaded = await fetch(`${fixture.stack.gatewayUrl}/v1/memory/documents`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}` },
      body: form,
    });
    expect(uploaded.status).toBe(201);
    expect(MemoryDocumentsIngestResponse.parse(await uploaded.json()).document.pages).toBe(3);

    const reply = await fixture.chat(key, {
      message: 'How often should I do the descaling with citric acid?',
    });

    expect(reply.status).toBe(200);
    ChatResponse.parse(await reply.json());
    const prompt = sentMessages(fixture.fake.chatRequests().filter(isTurnRequest).at(-1));
    const system = prompt[0]?.content ?? '';
    // A chunk is lines of text: its item begins at the last list marker before the passage.
    const passage = system.indexOf('Descaling the heat exchanger yearly');
    expect(passage, system).toBeGreaterThan(0);
    const item = system.slice(system.lastIndexOf('\n- [', passage) + 1, passage);
    expect(item).toMatch(/^- \[\d{4}-\d{2}-\d{2}, document "Boiler manual", page 3\] /);
  });
});
