import { skillPath as contractSkillPath } from '@jarvis/contracts';
import { describe, expect, it } from 'vitest';
import { formatSkillFile, parseSkillFile, skillPath } from './skill-file';

describe('a skill file', () => {
  const draft = {
    name: 'weekly-review',
    description: 'Review the week: calendar, open loops, next steps',
    procedure: '1. Read the calendar.\n2. List open loops.',
  };

  it('is front matter with the name and description, then the procedure', () => {
    expect(formatSkillFile(draft)).toBe(
      '---\nname: weekly-review\ndescription: Review the week: calendar, open loops, next steps\n---\n1. Read the calendar.\n2. List open loops.\n',
    );
    expect(skillPath(' weekly-review ')).toBe('skills/weekly-review.md');
  });

  // The page keeps its own copy rather than bundle the contracts' zod schemas.
  it('is where the memory service looks for skills', () => {
    expect(skillPath('weekly-review')).toBe(contractSkillPath('weekly-review'));
  });

  it('reads back what it wrote', () => {
    expect(parseSkillFile(formatSkillFile(draft))).toEqual({
      ...draft,
      procedure: `${draft.procedure}\n`,
    });
  });

  it('keeps the description on one line', () => {
    const text = formatSkillFile({ ...draft, description: 'two\nlines  here ' });
    expect(text).toContain('\ndescription: two lines here\n---\n');
  });

  it('takes a file without front matter as all procedure', () => {
    expect(parseSkillFile('just steps\n')).toEqual({
      name: '',
      description: '',
      procedure: 'just steps\n',
    });
  });

  it('reads front matter with Windows line ends and unknown keys', () => {
    expect(
      parseSkillFile('---\r\nname: a\r\nauthor: me\r\ndescription: b\r\n---\r\nsteps'),
    ).toEqual({ name: 'a', description: 'b', procedure: 'steps' });
  });
});
