import { describe, expect, it } from 'vitest';
import { isSameFact, normaliseFactText } from './fact-text';

describe('isSameFact', () => {
  it('ignores case, punctuation and spacing', () => {
    expect(normaliseFactText('  I am allergic to PEANUTS!')).toBe('i am allergic to peanuts');
    expect(isSameFact('I am allergic to peanuts.', 'i am  allergic to peanuts')).toBe(true);
  });

  it("takes the user's words and extraction's for the same fact", () => {
    expect(isSameFact('I am allergic to peanuts', 'The user is allergic to peanuts.')).toBe(true);
    expect(isSameFact("I'm allergic to peanuts", 'User is allergic to peanuts')).toBe(true);
    expect(isSameFact('I start work before noon', 'I start work after noon')).toBe(false);
  });

  it('takes a near repeat for the same fact', () => {
    expect(
      isSameFact(
        'The user is allergic to peanuts and carries an EpiPen',
        'The user is allergic to peanuts and always carries an EpiPen',
      ),
    ).toBe(true);
  });

  it('keeps facts apart when the words that differ are many, a negation or a number', () => {
    expect(isSameFact('I like tea', 'I like green tea')).toBe(false);
    expect(
      isSameFact(
        'The user is allergic to peanuts and carries an EpiPen',
        'The user is not allergic to peanuts and carries an EpiPen',
      ),
    ).toBe(false);
    expect(
      isSameFact(
        'The dentist appointment is on the 14th of March at the clinic in town',
        'The dentist appointment is on the 15th of March at the clinic in town',
      ),
    ).toBe(false);
  });
});
