type RedactionKind = 'secret' | 'email' | 'phone' | 'card' | 'iban';

export type Redactor = {
  // Replaces every sensitive value with a placeholder; the same value always gets the same
  // placeholder within one Redactor (so a whole conversation stays consistent).
  redact(text: string): string;
  // Puts the original values back. With { secrets: false } secret placeholders stay as placeholders
  // (used for tool-call arguments, so a prompt-injected model cannot send the user's API key to a
  // web tool); other kinds are always restored.
  restore(text: string, options: { secrets: boolean }): string;
  // How many distinct values of each kind were replaced (for logs/metrics; never the values).
  counts(): Record<RedactionKind, number>;
};

type Range = [start: number, end: number];
type Span = { start: number; end: number; kind: RedactionKind };
// `hint` is a cheap test that every text the detector could match passes. Most texts fail most
// hints (no '@', no '://', no key word), and the detectors' own patterns, which try their
// lookbehinds at every position, then never run: that was most of redaction's CPU per call.
type Detector = { kind: RedactionKind; hint: RegExp; find: (text: string) => Range[] };

const LABELS: Record<RedactionKind, string> = {
  secret: 'SECRET',
  email: 'EMAIL',
  phone: 'PHONE',
  card: 'CARD',
  iban: 'IBAN',
};

// Models echo placeholders loosely ("[ EMAIL_1 ]", "[EMAIL 1]", "[email-1]", markdown's
// "EMAIL\_1"), so restoring accepts those spellings. Reserving uses the same pattern: a loose
// spelling that restore would map must never be issued for a different value.
const PLACEHOLDER = new RegExp(
  String.raw`\[\s*(${Object.values(LABELS).join('|')})[\s\\_-]*(\d{1,9})\s*\]`,
  'gi',
);

// Every spelling of a placeholder starts with a bracket, and most texts have none.
function mayHoldPlaceholder(text: string): boolean {
  return text.includes('[');
}

const PEM_PRIVATE_KEY =
  // A pasted key cut off before its END line still runs to the end of the text: the rest is key.
  /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|$)/g;

const VENDOR_TOKENS = [
  /sk-[\w-]{20,}/, // OpenAI sk-… and sk-proj-…, Anthropic sk-ant-…
  /[sr]k_(?:live|test)_[A-Za-z0-9]{16,}/, // Stripe; test-mode keys still authenticate the account
  /gh[pousr]_[A-Za-z0-9]{36,}/,
  /github_pat_\w{22,}/,
  /xox[abprs]-[A-Za-z0-9-]{10,}/, // Slack
  /(?:AKIA|ASIA)[0-9A-Z]{16}/, // AWS access key ids; ASIA ones belong to temporary credentials
  /AIza[\w-]{35}/, // Google
  /eyJ[\w-]{8,}\.eyJ[\w-]{8,}\.[\w-]+/, // JWT: header and payload both start as base64url of '{"'
];
const VENDOR_TOKEN = new RegExp(
  String.raw`(?<![\w-])(?:${VENDOR_TOKENS.map((token) => token.source).join('|')})(?![\w-])`,
  'g',
);

// Needs a digit and 16 characters so prose and docs ("Bearer YOUR_ACCESS_TOKEN") are left alone.
const BEARER_TOKEN =
  /\b[Bb]earer[ \t]+(?<token>(?=[\w.~+/=-]{16})(?=[\w.~+/=-]*\d)[\w.~+/=-]*[\w~+/=-])/dg;

const URL_PASSWORD = /(?<=:\/\/[^\s:/@]+:)[^\s/@]+(?=@)/g;

// Only the value is replaced, so the model still knows which setting the line is about. The key's
// prefix is bounded: unbounded, every word start in a long unbroken token rescans it to the end.
const SECRET_ASSIGNMENT =
  /\b[\w-]{0,40}?(?:password|passwd|pwd|passphrase|secret|token|(?:api|access|secret|private)[_-]?key)["']?[ \t]*[:=][ \t]*(?:"(?<double>[^"\n]+)"|'(?<single>[^'\n]+)'|(?<bare>[^\s"',;&]+))/dgi;

const EMAIL =
  // `icon@2x.png` is an image name, not an address.
  /(?<![\w.%+-])[\w.%+-]+@(?!\d+x\.)[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}(?![\w-])/g;

// Two letters, two check digits, then the BBAN in groups of four as printed or run together.
// Trailing groups may belong to the next word, so the validated prefix is what counts.
const IBAN_CANDIDATE =
  /(?<![A-Za-z0-9])[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?(?![A-Za-z0-9])/g;

// Cards and phones never start inside a longer token, after a colon (a time's or timestamp's tail)
// or right after another digit group (`\d `): the tail of a longer number, such as an IBAN that
// failed its check, is not a number of its own. `tel:` links are the one colon that does lead one.
const NOT_A_TAIL = String.raw`(?:(?<=\btel:)|(?<![\w+./:,-]|\d ))`;

// Issuer numbers start with 2–6 (Mastercard, Visa, Amex, Discover, JCB, UnionPay…); requiring it
// keeps most order and tracking numbers out even when they happen to pass Luhn. At most five
// groups (4-4-4-4-3 is the longest print), so a longer grouped run is left alone as a reference and
// cutting back to a valid prefix stays cheap.
const CARD_CANDIDATE = new RegExp(
  String.raw`${NOT_A_TAIL}[2-6]\d{3}(?:(?:[ -]\d{1,6}){1,4}|\d{9,15})(?!\w|[ .,-]\d)`,
  'g',
);

// Shapes that carry a phone number: +country code; an area code in parentheses; a national number
// with its leading trunk 0 and separators; the North American 3-3-4. Bare digit runs (order
// numbers, years) and version strings have none of these shapes.
const PHONE_CANDIDATE = new RegExp(
  String.raw`${NOT_A_TAIL}(?:${[
    String.raw`\+\d+(?:[ .-]?\(\d{1,4}\)[ .-]?\d+)?(?:[ .-]\d+)*`,
    String.raw`\((?:0\d{1,4}|\d{3})\)[ .-]?\d+(?:[ ./-]\d+)*`,
    String.raw`0\d{1,4}(?:[ ./-]\d+)+`,
    String.raw`(?:1[ .-])?\d{3}[ .-]\d{3}[ .-]\d{4}`,
  ].join('|')})(?!\w|[.:/-]\d)`,
  'g',
);
const DAY_MONTH_YEAR = /^\d{1,2}([./-])\d{1,2}\1\d{2,4}$/;
const TIME_RANGE = /^(?:[01]\d|2[0-3])[0-5]\d-(?:[01]\d|2[0-3])[0-5]\d$/;

// Checked in this order; a match overlapping an earlier one is dropped, so a key inside an
// `api_key=` line is replaced once and a URL's password is not also taken for an email address.
// Each hint is what its pattern cannot match without (a vendor prefix, a key word, the first
// digits of a card, the start of each phone shape): a pattern changed without its hint silently
// stops finding what the hint does not admit.
const DETECTORS: Detector[] = [
  {
    kind: 'secret',
    hint: /-----BEGIN /,
    find: (text) => wholeMatches(text, PEM_PRIVATE_KEY),
  },
  {
    kind: 'secret',
    hint: /sk-|k_(?:live|test)_|gh[pousr]_|github_pat_|xox|AKIA|ASIA|AIza|eyJ/,
    find: (text) => wholeMatches(text, VENDOR_TOKEN),
  },
  {
    kind: 'secret',
    hint: /earer/,
    find: (text) => groupMatches(text, BEARER_TOKEN, isPlausibleSecret),
  },
  {
    kind: 'secret',
    hint: /:\/\//,
    find: (text) => wholeMatches(text, URL_PASSWORD, isPlausibleSecret),
  },
  {
    kind: 'secret',
    hint: /pass|pwd|secret|token|key/i,
    find: (text) => groupMatches(text, SECRET_ASSIGNMENT, isPlausibleAssignedSecret),
  },
  { kind: 'email', hint: /@/, find: (text) => wholeMatches(text, EMAIL) },
  {
    kind: 'iban',
    hint: /[A-Z]{2}\d\d/,
    find: (text) => prefixMatches(text, IBAN_CANDIDATE, isValidIban),
  },
  {
    kind: 'card',
    hint: /[2-6]\d{3}/,
    find: (text) => prefixMatches(text, CARD_CANDIDATE, isValidCard),
  },
  {
    kind: 'phone',
    hint: /[+(0]\d|\d{3}[ .-]\d/,
    find: (text) => wholeMatches(text, PHONE_CANDIDATE, isPlausiblePhone),
  },
];

// Placeholder numbers: each kind counts up from 1, skipping every number that already appeared in
// placeholder form in any text this redactor has seen (prompts and model replies alike) without
// having been issued by it. Restore maps only issued numbers, so a literal "[EMAIL_1]" typed by the
// user or invented by the model never turns into someone's address. A later text that spells an
// already issued placeholder is indistinguishable from our own (tool-call arguments keep secret
// placeholders and come back in the history), so it is treated as ours.
export function createRedactor(): Redactor {
  const issued = new Map<string, { kind: RedactionKind; value: string }>();
  const labelByIdentity = new Map<string, string>();
  const reserved = new Set<string>();
  const nextNumber: Record<RedactionKind, number> = {
    secret: 1,
    email: 1,
    phone: 1,
    card: 1,
    iban: 1,
  };

  function reserveForeignLabels(text: string): void {
    if (!mayHoldPlaceholder(text)) return;
    for (const [, word = '', digits = ''] of text.matchAll(PLACEHOLDER)) {
      const label = canonicalLabel(word, digits);
      if (!issued.has(label)) reserved.add(label);
    }
  }

  function labelFor(kind: RedactionKind, value: string): string {
    const identity = `${kind}:${identityOf(kind, value)}`;
    const existing = labelByIdentity.get(identity);
    if (existing) return existing;
    let number = nextNumber[kind];
    while (reserved.has(`${LABELS[kind]}_${number}`)) number++;
    nextNumber[kind] = number + 1;
    const label = `${LABELS[kind]}_${number}`;
    labelByIdentity.set(identity, label);
    issued.set(label, { kind, value });
    return label;
  }

  return {
    redact(text) {
      reserveForeignLabels(text);
      let redacted = '';
      let cursor = 0;
      for (const { start, end, kind } of findSensitiveSpans(text)) {
        redacted += `${text.slice(cursor, start)}[${labelFor(kind, text.slice(start, end))}]`;
        cursor = end;
      }
      return redacted + text.slice(cursor);
    },
    restore(text, { secrets }) {
      if (!mayHoldPlaceholder(text)) return text;
      // A placeholder the model made up must not be issued later and then "restored" here.
      reserveForeignLabels(text);
      return text.replace(PLACEHOLDER, (placeholder: string, word: string, digits: string) => {
        const original = issued.get(canonicalLabel(word, digits));
        if (!original || (original.kind === 'secret' && !secrets)) return placeholder;
        return original.value;
      });
    },
    counts() {
      const counts: Record<RedactionKind, number> = {
        secret: 0,
        email: 0,
        phone: 0,
        card: 0,
        iban: 0,
      };
      for (const { kind } of issued.values()) counts[kind]++;
      return counts;
    },
  };
}

function canonicalLabel(word: string, digits: string): string {
  return `${word.toUpperCase()}_${Number(digits)}`;
}

// Separators and letter case do not change which card, account, line or mailbox is meant, so
// "4111-1111-…" and "4111 1111 …" share one placeholder. Secrets are compared exactly.
function identityOf(kind: RedactionKind, value: string): string {
  if (kind === 'secret') return value;
  if (kind === 'email') return value.toLowerCase();
  return value.replace(/[^+0-9A-Za-z]/g, '').toUpperCase();
}

function findSensitiveSpans(text: string): Span[] {
  // Placeholder-shaped text is claimed first, so `password=[SECRET_1]` is not redacted again.
  const claimed = mayHoldPlaceholder(text) ? wholeMatches(text, PLACEHOLDER) : [];
  const spans: Span[] = [];
  for (const { kind, hint, find } of DETECTORS) {
    if (!hint.test(text)) continue;
    for (const [start, end] of find(text)) {
      if (claimed.some(([from, to]) => start < to && from < end)) continue;
      claimed.push([start, end]);
      spans.push({ start, end, kind });
    }
  }
  return spans.sort((a, b) => a.start - b.start);
}

function wholeMatches(
  text: string,
  pattern: RegExp,
  isValid: (value: string) => boolean = () => true,
): Range[] {
  return [...text.matchAll(pattern)]
    .filter((match) => isValid(match[0]))
    .map((match) => [match.index, match.index + match[0].length]);
}

// The first named group that took part in the match is the sensitive part (needs the `d` flag).
function groupMatches(text: string, pattern: RegExp, isValid: (value: string) => boolean): Range[] {
  const ranges: Range[] = [];
  for (const match of text.matchAll(pattern)) {
    const range = Object.values(match.indices?.groups ?? {}).find((group) => group !== undefined);
    if (range && isValid(text.slice(...range))) ranges.push(range);
  }
  return ranges;
}

function prefixMatches(
  text: string,
  pattern: RegExp,
  isValid: (value: string) => boolean,
): Range[] {
  const ranges: Range[] = [];
  for (const match of text.matchAll(pattern)) {
    const prefix = longestValidPrefix(match[0], isValid);
    if (prefix) ranges.push([match.index, match.index + prefix.length]);
  }
  return ranges;
}

// Grouped numbers run straight into an expiry, a CVV or the next word ("4111 1111 1111 1111 123"),
// so candidates are cut back group by group until one validates.
function longestValidPrefix(
  candidate: string,
  isValid: (value: string) => boolean,
): string | undefined {
  const ends = [...candidate.matchAll(/[ -]/g)].map((separator) => separator.index).reverse();
  return [candidate.length, ...ends].map((end) => candidate.slice(0, end)).find(isValid);
}

// Template and variable references (`$DB_PASSWORD`, `<your key>`, `{{token}}`, `%TOKEN%`), shell
// paths (`PWD=/home/me`) and empty JSON values are not secrets; taking them would also break tool
// calls that pass them on, since secret placeholders stay in tool-call arguments.
function isPlausibleSecret(value: string): boolean {
  return (
    value.length >= 4 &&
    !/^[$<{%/]/.test(value) &&
    !/^(?:null|none|true|false|undefined)$/i.test(value)
  );
}

// After a key word, a plain lowercase word is usually prose ("the token: expires soon").
function isPlausibleAssignedSecret(value: string): boolean {
  return isPlausibleSecret(value) && !/^[a-z]+$/.test(value);
}

function isValidCard(value: string): boolean {
  const digits = value.replace(/\D/g, '');
  return digits.length >= 13 && digits.length <= 19 && passesLuhn(digits);
}

function passesLuhn(digits: string): boolean {
  let sum = 0;
  [...digits].reverse().forEach((char, position) => {
    const digit = Number(char) * (position % 2 === 1 ? 2 : 1);
    sum += digit > 9 ? digit - 9 : digit;
  });
  return sum % 10 === 0;
}

// ISO 13616: move the first four characters to the end, read letters as 10–35, and the whole
// number must leave 1 modulo 97. Folded character by character so it never exceeds a double.
function isValidIban(value: string): boolean {
  const compact = value.replace(/ /g, '');
  if (compact.length < 15 || compact.length > 34) return false;
  let remainder = 0;
  for (const char of compact.slice(4) + compact.slice(0, 4)) {
    const number = Number.parseInt(char, 36);
    remainder = (remainder * (number < 10 ? 10 : 100) + number) % 97;
  }
  return remainder === 1;
}

// E.164 allows at most 15 digits; fewer than 8 is an extension, a year or a count. Dates
// (03/15/2024) and opening hours (0900-1730) share a national number's shape.
function isPlausiblePhone(value: string): boolean {
  const digits = value.replace(/\D/g, '').length;
  return digits >= 8 && digits <= 15 && !DAY_MONTH_YEAR.test(value) && !TIME_RANGE.test(value);
}
