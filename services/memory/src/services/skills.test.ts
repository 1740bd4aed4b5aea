import { SKILL_DESCRIPTION_MAX_CHARS } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { parseSkill } from './skills';

describe('parseSkill', () => {
  it('reads the name, the description and the procedure after the front matter', () => {
    const content = [
      '---',
      'name: trip-planning',
      'description: How I like trips planned',
      '---',
      '1. No flights before 9.',
      '2. Metric units.',
      '',
    ].join('\n');

    expect(parseSkill(content)).toEqual({
      skill: {
        name: 'trip-planning',
        description: 'How I like trips planned',
        body: '1. No flights before 9.\n2. Metric units.\n',
      },
    });
  });

  it('takes CRLF line ends, quoted values, blank lines and spaces around the colon', () => {
    const content =
      '---\r\nname : "weekly-review"\r\n\r\ndescription:  \'Friday review\'  \r\n---\r\nSteps';

    expect(parseSkill(content)).toEqual({
      skill: { name: 'weekly-review', description: 'Friday review', body: 'Steps' },
    });
  });

  it('ends the front matter at the first closing line, so the procedure may hold ---', () => {
    const content = '---\nname: a\ndescription: b\n---\nbefore\n---\nafter';

    expect(parseSkill(content).skill?.body).toBe('before\n---\nafter');
  });

  it.each([
    ['no front matter', 'name: a\ndescription: b\nSteps', /must start with front matter/],
    ['an unclosed front matter', '---\nname: a\ndescription: b\nSteps', /must start with front/],
    ['a line that is not key: value', '---\nname: a\njust words\n---\nx', /"just words" is not/],
    ['an unknown key', '---\nname: a\ndescription: b\ntags: x\n---\nx', /unknown key "tags"/],
    ['a key given twice', '---\nname: a\nname: b\ndescription: c\n---\nx', /name is given twice/],
    ['no name', '---\ndescription: b\n---\nx', /has no name/],
    ['no description', '---\nname: a\n---\nx', /has no description/],
    ['an empty description', '---\nname: a\ndescription: ""\n---\nx', /has no description/],
    ['an uppercase name', '---\nname: Trip\ndescription: b\n---\nx', /name "Trip" must be 1-64/],
    ['a name starting with -', '---\nname: -a\ndescription: b\n---\nx', /name "-a" must be/],
    [
      'a name of 65 characters',
      `---\nname: ${'a'.repeat(65)}\ndescription: b\n---\nx`,
      /must be 1-64 lowercase/,
    ],
    [
      'a description past the limit',
      `---\nname: a\ndescription: ${'d'.repeat(SKILL_DESCRIPTION_MAX_CHARS + 1)}\n---\nx`,
      /description must be at most 200 characters/,
    ],
    [
      'a front matter past 1,000 characters',
      `---\nname: a\n${'\n'.repeat(1_000)}description: b\n---\nx`,
      /must end within 1000 characters/,
    ],
  ])('refuses %s, saying why', (_case, content, problem) => {
    const reading = parseSkill(content);

    expect(reading.skill).toBeUndefined();
    expect(reading.problem).toMatch(problem);
  });

  it('accepts a description of exactly the limit and a name of 64 characters', () => {
    const name = `a${'-'.repeat(62)}z`;
    const description = 'd'.repeat(SKILL_DESCRIPTION_MAX_CHARS);

    expect(parseSkill(`---\nname: ${name}\ndescription: ${description}\n---\nx`).skill).toEqual({
      name,
      description,
      body: 'x',
    });
  });
});
