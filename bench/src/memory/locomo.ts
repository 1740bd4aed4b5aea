import { readFileSync } from 'node:fs';
import { z } from 'zod';

// The LoCoMo benchmark's conversations: sessions of dated turns, and questions whose evidence
// names the turns (dia_id) that answer them.
const Turn = z.object({ speaker: z.string(), dia_id: z.string(), text: z.string() });
const Sample = z.object({
  sample_id: z.string(),
  conversation: z.record(z.string(), z.unknown()),
  qa: z.array(
    z.object({
      question: z.string(),
      evidence: z.array(z.string()),
      category: z.number(),
    }),
  ),
});

type LocomoTurn = { diaId: string; text: string; createdAt: string };
type LocomoQuestion = { question: string; evidence: string[]; category: number };
export type LocomoConversation = { id: string; turns: LocomoTurn[]; questions: LocomoQuestion[] };

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

// "1:56 pm on 8 May, 2023" -> ISO; turns of a session get one second each, in order.
function parseSessionDate(text: string): Date {
  const match = text.match(/(\d{1,2}):(\d{2})\s*(am|pm)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})/i);
  if (!match) throw new Error(`unreadable session date: ${text}`);
  const [, hour, minute, half, day, month, year] = match;
  const hours = (Number(hour) % 12) + ((half ?? '').toLowerCase() === 'pm' ? 12 : 0);
  return new Date(
    Date.UTC(Number(year), MONTHS.indexOf(month ?? ''), Number(day), hours, Number(minute)),
  );
}

export function loadLocomo(path: string): LocomoConversation[] {
  const samples = z.array(Sample).parse(JSON.parse(readFileSync(path, 'utf8')));
  return samples.map((sample) => {
    const turns: LocomoTurn[] = [];
    const sessions = Object.keys(sample.conversation)
      .flatMap((key) => {
        const match = key.match(/^session_(\d+)$/);
        return match ? [Number(match[1])] : [];
      })
      .sort((a, b) => a - b);
    for (const session of sessions) {
      const date = parseSessionDate(String(sample.conversation[`session_${session}_date_time`]));
      z.array(Turn)
        .parse(sample.conversation[`session_${session}`])
        .forEach((turn, index) => {
          turns.push({
            diaId: turn.dia_id,
            text: `${turn.speaker}: ${turn.text}`,
            createdAt: new Date(date.getTime() + index * 1_000).toISOString(),
          });
        });
    }
    const questions = sample.qa.flatMap((qa) => {
      const evidence = qa.evidence
        .flatMap((entry) => entry.split(/[;,]/).map((id) => id.trim()))
        .filter(Boolean);
      return evidence.length > 0
        ? [{ question: qa.question, evidence, category: qa.category }]
        : [];
    });
    return { id: sample.sample_id, turns, questions };
  });
}
