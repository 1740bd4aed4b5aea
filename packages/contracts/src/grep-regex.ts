import { type AST, RegExpParser } from '@eslint-community/regexpp';

// The rules a grep regex must meet before it reaches Postgres (`~*`, an ARE).
//
// Postgres compiles a counted repetition by copying what it repeats, so `(a{1,255}){1,255}`
// becomes tens of thousands of states: real Postgres refuses it as "too complex", but the
// embedded one (PGlite) hangs, at once or on the next statement that fails, with no timeout or
// cancel to stop it. Matching time also grows with the copies, since each one is a
// state that every character of every line may visit. So repetitions are bounded one by one and
// in total, and never nested (except inside an optional group), nor do they repeat constraints
// (anchors, word boundaries, lookarounds), which alone can make a short pattern too complex.
// Backreferences are refused because they are the one feature that makes Postgres backtrack.
//
// The pattern is parsed as an ECMAScript regex (Annex B, no flags): for what grep users write
// (classes, escapes, groups, anchors, quantifiers, alternation) the syntax is the same. Where
// they differ, Postgres may still refuse a pattern this accepts, which is answered as a bad
// request too; a Postgres-only extension such as `(?i)` or `***=` is refused here.

// The largest bound of one counted repetition, `{n}` or `{n,m}`.
export const GREP_REGEX_MAX_REPEAT = 100;
// The most positions a whole pattern's repetitions may expand to: each repetition counts its
// largest bound (`+` and `?` 1, `*` 0, an unbounded `{n,}` n) times the characters and classes
// it repeats, so `\d{4}` counts 4 and `(ab|c){30}` 90.
export const GREP_REGEX_MAX_POSITIONS = 100;

class PatternProblem extends Error {}

// `atoms`: the characters and classes outside any repetition; `copies`: what the repetitions
// expand to.
type Measure = { atoms: number; copies: number; hasQuantifier: boolean; hasConstraint: boolean };

const NOTHING: Measure = { atoms: 0, copies: 0, hasQuantifier: false, hasConstraint: false };
const ATOM: Measure = { ...NOTHING, atoms: 1 };
const CONSTRAINT: Measure = { ...NOTHING, hasConstraint: true };

// Postgres' own constraint escapes (\A, \Z, word starts and ends), which Annex B reads as
// plain letters.
const POSTGRES_CONSTRAINT = /^\\[AZmMyY]$/;

function sum(measures: Measure[]): Measure {
  return {
    atoms: measures.reduce((total, measure) => total + measure.atoms, 0),
    copies: measures.reduce((total, measure) => total + measure.copies, 0),
    hasQuantifier: measures.some((measure) => measure.hasQuantifier),
    hasConstraint: measures.some((measure) => measure.hasConstraint),
  };
}

function measureAlternatives(alternatives: AST.Alternative[]): Measure {
  return sum(alternatives.map((alternative) => sum(alternative.elements.map(measureElement))));
}

function describeBounds(quantifier: AST.Quantifier): string {
  if (quantifier.max === Number.POSITIVE_INFINITY) return `{${quantifier.min},}`;
  if (quantifier.min === quantifier.max) return `{${quantifier.min}}`;
  return `{${quantifier.min},${quantifier.max}}`;
}

function measureQuantifier(quantifier: AST.Quantifier): Measure {
  const isUnbounded = quantifier.max === Number.POSITIVE_INFINITY;
  const largestBound = isUnbounded ? quantifier.min : quantifier.max;
  if (largestBound > GREP_REGEX_MAX_REPEAT) {
    throw new PatternProblem(
      `a repetition may repeat at most ${GREP_REGEX_MAX_REPEAT} times, not ${describeBounds(quantifier)}`,
    );
  }
  const inner = measureElement(quantifier.element);
  const isOptional = quantifier.min === 0 && quantifier.max === 1;
  if (inner.hasQuantifier && !isOptional) {
    throw new PatternProblem(
      `a repeated group must not contain another repetition (${quantifier.raw}); only an optional group (…)? may`,
    );
  }
  // Postgres works constraints through the copies of what repeats them, which can make even
  // `(\y){20,}` too complex for it.
  if (inner.hasConstraint && !isOptional) {
    throw new PatternProblem(
      `a repetition must not repeat an anchor, a word boundary or a lookaround (${quantifier.raw})`,
    );
  }
  return {
    atoms: 0,
    copies: largestBound * (inner.atoms + inner.copies),
    hasQuantifier: true,
    hasConstraint: inner.hasConstraint,
  };
}

function measureElement(element: AST.Element): Measure {
  switch (element.type) {
    case 'Quantifier':
      return measureQuantifier(element);
    case 'Group':
    case 'CapturingGroup':
      return measureAlternatives(element.alternatives);
    case 'Assertion':
      if (element.kind === 'lookahead' || element.kind === 'lookbehind') {
        return { ...measureAlternatives(element.alternatives), hasConstraint: true };
      }
      return CONSTRAINT;
    case 'Backreference':
      throw new PatternProblem('backreferences are not supported');
    case 'Character':
      // Annex B reads `\1` with no group before it as an octal escape; Postgres always reads a
      // single digit after a backslash as a backreference.
      if (/^\\[1-9]/.test(element.raw)) {
        throw new PatternProblem('backreferences are not supported');
      }
      return POSTGRES_CONSTRAINT.test(element.raw) ? CONSTRAINT : ATOM;
    default:
      return ATOM;
  }
}

function parse(pattern: string): AST.Pattern {
  try {
    return new RegExpParser().parsePattern(pattern, 0, pattern.length, { unicode: false });
  } catch (error) {
    // The parser's message repeats the pattern before its reason: keep the reason.
    const reason = error instanceof Error ? (error.message.split(': ').at(-1) ?? '') : '';
    throw new PatternProblem(`invalid regular expression: ${reason.toLowerCase()}`);
  }
}

// Why Postgres must not run this grep regex, or undefined when it may.
export function describeGrepRegexProblem(pattern: string): string | undefined {
  try {
    const { copies } = measureAlternatives(parse(pattern).alternatives);
    if (copies > GREP_REGEX_MAX_POSITIONS) {
      return `too complex: its repetitions expand to ${copies} positions, at most ${GREP_REGEX_MAX_POSITIONS}`;
    }
    return undefined;
  } catch (error) {
    if (error instanceof PatternProblem) return error.message;
    throw error;
  }
}
