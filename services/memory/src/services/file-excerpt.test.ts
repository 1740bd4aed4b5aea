import { describe, expect, it } from 'vitest';
import { FILE_EXCERPT_MAX_CHARS, fileExcerpt } from './file-excerpt';

const EPISODE = [
  '---',
  'title: "Booking the ferry to Bergen"',
  'topics: ["travel","ferry"]',
  '---',
  '# Booking the ferry to Bergen',
  '',
  '- when: 2026-11-22 10:00',
  '',
  '## Asked',
  'Find a ferry from Hirtshals to Bergen for two adults and a car.',
  '',
  '## Outcome',
  'Booked the Fjord Line crossing on 3 December, cabin included.',
  '',
  '## Open loops',
  '- pay the balance',
  '',
].join('\n');

describe('fileExcerpt', () => {
  it("shows an episode's title and outcome", () => {
    expect(fileExcerpt(EPISODE)).toBe(
      'Booking the ferry to Bergen. Outcome: Booked the Fjord Line crossing on 3 December, cabin included.',
    );
  });

  it('shows the title alone when the episode has no outcome section', () => {
    expect(fileExcerpt('---\ntitle: Plain title\n---\n# x\nbody')).toBe('Plain title');
  });

  it('shows the start of any other file, on one line and clipped at a word', () => {
    const note = `# Notes\n\n${'word '.repeat(400)}`;
    const excerpt = fileExcerpt(note);
    expect(excerpt.startsWith('# Notes word word')).toBe(true);
    expect(excerpt.length).toBeLessThanOrEqual(FILE_EXCERPT_MAX_CHARS);
    expect(excerpt.endsWith('word…')).toBe(true);
  });
});
