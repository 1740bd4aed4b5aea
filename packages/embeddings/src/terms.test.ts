import { describe, expect, it } from 'vitest';
import { isStopTerm, stem, toTerms } from './terms';

describe('toTerms', () => {
  it('lower-cases every word', () => {
    expect(toTerms('Lisbon BEACH Trip')).toEqual(['lisbon', 'beach', 'trip']);
  });

  it('drops stop words, so a question keeps only what it is about', () => {
    expect(toTerms('What is the name of my dog?')).toEqual(['nam', 'dog']);
    expect(toTerms('what is the')).toEqual([]);
  });

  it("strips a possessive 's, straight or curly", () => {
    expect(toTerms("Max's leash")).toEqual(['max', 'leash']);
    expect(toTerms('Anna’s garden')).toEqual(['anna', 'garden']);
  });

  it('gives every inflection of a word the same term', () => {
    const [painting] = toTerms('painting');
    expect(painting).toBe('paint');
    expect(toTerms('painted paints Painting')).toEqual(['paint', 'paint', 'paint']);
  });

  it('gives a plural of an -ing, -er or -ion noun the term of its stem', () => {
    expect(toTerms('paintings')).toEqual(toTerms('painted'));
    expect(toTerms('meetings')).toEqual(toTerms('meeting'));
    expect(toTerms('painters')).toEqual(toTerms('painter'));
    expect(toTerms('questions')).toEqual(toTerms('question'));
  });

  it('gives a word ending in e the same term as its inflections', () => {
    expect(new Set(toTerms('name named names naming'))).toHaveProperty('size', 1);
    expect(new Set(toTerms('beagle beagles'))).toHaveProperty('size', 1);
    expect(new Set(toTerms('bake baked baking'))).toHaveProperty('size', 1);
  });

  it('keeps numbers whole', () => {
    expect(toTerms('Flight 447 landed in 2023')).toEqual(['flight', '447', 'land', '2023']);
  });

  it('returns nothing for text without words', () => {
    expect(toTerms('')).toEqual([]);
    expect(toTerms('?!  ...')).toEqual([]);
  });
});

describe('stem', () => {
  it('removes a suffix and undoubles the consonant it leaves', () => {
    expect(stem('running')).toBe('run');
    expect(stem('runs')).toBe('run');
    expect(stem('stopped')).toBe('stop');
  });

  it('leaves short words alone rather than cut them to a stub', () => {
    expect(stem('red')).toBe('red');
    expect(stem('bus')).toBe('bus');
    expect(stem('sing')).toBe('sing');
    expect(stem('cat')).toBe('cat');
  });
});

describe('isStopTerm', () => {
  it('knows the terms that stop words stem to, so inflections of a stop word are told apart', () => {
    const [liked] = toTerms('liked');
    expect(liked).toBeDefined();
    expect(isStopTerm(liked ?? '')).toBe(true);
    expect(toTerms('like')).toEqual([]);
    const [magazine] = toTerms('magazines');
    expect(isStopTerm(magazine ?? '')).toBe(false);
  });
});
