import { readFile } from 'node:fs/promises';
import { z } from 'zod';

// What the soak says: everyday chat lines from the LoCoMo conversations (the data set the memory
// bench uses), and twenty facts about the user that are planted early and asked about at the end.

const Sample = z.object({ conversation: z.record(z.string(), z.unknown()) });
const Turn = z.object({ text: z.string().min(1) });

export type PlantedFact = {
  // What the user says in one of the first turns.
  statement: string;
  // What a good extraction model would keep from it.
  fact: string;
  // Asked at the end; it does not contain the needle.
  question: string;
  // The words that must be in the prompt for the answer to be there.
  needle: string;
};

export const PLANTED_FACTS: PlantedFact[] = [
  {
    statement: 'By the way, my locker code at the gym is 4817.',
    fact: "The user's gym locker code is 4817.",
    question: 'What is my gym locker code again?',
    needle: '4817',
  },
  {
    statement: 'My sister Ingrid moved last month, she lives in Tromsø now.',
    fact: "The user's sister Ingrid lives in Tromsø.",
    question: 'Where does my sister Ingrid live these days?',
    needle: 'Tromsø',
  },
  {
    statement: 'Our new cat is called Biscotti, she is a grey tabby.',
    fact: "The user's cat is a grey tabby called Biscotti.",
    question: 'What is the name of our cat?',
    needle: 'Biscotti',
  },
  {
    statement: 'I should mention that I am allergic to hazelnuts.',
    fact: 'The user is allergic to hazelnuts.',
    question: 'Which food am I allergic to?',
    needle: 'hazelnut',
  },
  {
    statement: 'I ride a green Brompton to work every day.',
    fact: 'The user rides a green Brompton bike to work.',
    question: 'What kind of bike do I ride to work?',
    needle: 'Brompton',
  },
  {
    statement: 'My dentist is Dr. Okonkwo on Thereses gate.',
    fact: "The user's dentist is Dr. Okonkwo on Thereses gate.",
    question: 'Who is my dentist?',
    needle: 'Okonkwo',
  },
  {
    statement: 'Our wedding anniversary is on the 14th of September.',
    fact: "The user's wedding anniversary is on the 14th of September.",
    question: 'When is our wedding anniversary?',
    needle: '14th of September',
  },
  {
    statement: 'My favourite tea is lapsang souchong, the smoky one.',
    fact: "The user's favourite tea is lapsang souchong.",
    question: 'What is my favourite tea?',
    needle: 'lapsang',
  },
  {
    statement: 'We left the camper van at the Kvitfjell campsite for the winter.',
    fact: "The user's camper van is parked at the Kvitfjell campsite for the winter.",
    question: 'Where did we leave the camper van?',
    needle: 'Kvitfjell',
  },
  {
    statement: 'My manager at work is Priyanka Raghunathan.',
    fact: "The user's manager is Priyanka Raghunathan.",
    question: "What is my manager's name?",
    needle: 'Raghunathan',
  },
  {
    statement: 'The wifi router up in the attic is a Zyxel.',
    fact: "The wifi router in the user's attic is a Zyxel.",
    question: 'What brand is the wifi router in the attic?',
    needle: 'Zyxel',
  },
  {
    statement: 'My running club meets on Thursdays in Frognerparken.',
    fact: "The user's running club meets on Thursdays in Frognerparken.",
    question: 'Where does my running club meet?',
    needle: 'Frognerparken',
  },
  {
    statement: "My daughter's violin teacher is Mrs. Halvorsen.",
    fact: "The user's daughter learns violin with Mrs. Halvorsen.",
    question: 'Who teaches my daughter the violin?',
    needle: 'Halvorsen',
  },
  {
    statement: 'We keep the spare house key under the blue ceramic frog.',
    fact: "The user's spare house key is under the blue ceramic frog.",
    question: 'Where do we keep the spare house key?',
    needle: 'ceramic frog',
  },
  {
    statement: 'For the record, my blood type is AB negative.',
    fact: "The user's blood type is AB negative.",
    question: 'What is my blood type?',
    needle: 'AB negative',
  },
  {
    statement: 'I have started learning to play the hurdy-gurdy.',
    fact: 'The user is learning to play the hurdy-gurdy.',
    question: 'Which instrument am I learning to play?',
    needle: 'hurdy-gurdy',
  },
  {
    statement: 'My favourite author is Olga Tokarczuk.',
    fact: "The user's favourite author is Olga Tokarczuk.",
    question: 'Who is my favourite author?',
    needle: 'Tokarczuk',
  },
  {
    statement: 'The plumber we trust is Mats from Rørlegger Bakke.',
    fact: 'The user trusts the plumber Mats from Rørlegger Bakke.',
    question: 'Which plumber do we trust?',
    needle: 'Rørlegger Bakke',
  },
  {
    statement: 'My passport expires in March 2031, I checked today.',
    fact: "The user's passport expires in March 2031.",
    question: 'When does my passport expire?',
    needle: '2031',
  },
  {
    statement: "My son's best friend is a boy called Thorvald.",
    fact: "The user's son's best friend is called Thorvald.",
    question: "What is my son's best friend called?",
    needle: 'Thorvald',
  },
];

// Every line said in the LoCoMo conversations, in order. A needle found in them would make the
// end-of-soak check prove nothing, so that stops the bench.
export async function loadChatLines(path: string): Promise<string[]> {
  const samples = z.array(Sample).parse(JSON.parse(await readFile(path, 'utf8')));
  const lines = samples.flatMap((sample) =>
    Object.entries(sample.conversation)
      .filter(([key]) => /^session_\d+$/.test(key))
      .sort(([a], [b]) => Number(a.slice(8)) - Number(b.slice(8)))
      .flatMap(([, turns]) => (Array.isArray(turns) ? turns : []))
      .flatMap((turn) => {
        const parsed = Turn.safeParse(turn);
        return parsed.success ? [parsed.data.text] : [];
      }),
  );
  for (const { needle } of PLANTED_FACTS) {
    const hit = lines.find((line) => line.toLowerCase().includes(needle.toLowerCase()));
    if (hit) throw new Error(`the needle "${needle}" is already in the chat lines: ${hit}`);
  }
  return lines;
}

// The index-th message of an endless chat made of the lines: the lines once as they are, then
// pairs of them, so 100,000 messages from 2,760 lines are not 36 copies of the same texts.
// `salt` gives the soak's own conversation other pairs than the imported memories.
export function composeMessage(lines: string[], index: number, salt: number): string {
  const count = lines.length;
  const round = Math.floor(index / count);
  const first = lines[index % count] ?? '';
  if (round === 0) return first;
  const second = lines[(index * 7 + round * 131 + salt) % count] ?? '';
  return `${first} ${second}`;
}
