import { describe, expect, it } from 'vitest';
import { createRedactor } from './redactor';

// Built at runtime so secret scanners on push do not flag this file; shapes match the real ones.
const fake = (prefix: string, length: number, alphabet = 'aB3dE5fG7h') =>
  prefix + alphabet.repeat(Math.ceil(length / alphabet.length)).slice(0, length);

const OPENAI_KEY = fake('sk-proj-', 48);
const ANTHROPIC_KEY = fake('sk-ant-api03-', 95);
const GITHUB_TOKEN = fake('ghp_', 36);
const AWS_KEY_ID = 'AKIA' + 'IOSFODNN7EXAMPLE';
const JWT = `${fake('eyJ', 33)}.${fake('eyJ', 40)}.${fake('', 43)}`;

describe('createRedactor', () => {
  describe('secrets', () => {
    it.each([
      ['an OpenAI key', OPENAI_KEY],
      ['an Anthropic key', ANTHROPIC_KEY],
      ['a GitHub classic token', GITHUB_TOKEN],
      ['a GitHub OAuth token', fake('gho_', 36)],
      ['a GitHub app token', fake('ghs_', 36)],
      ['a GitHub fine-grained token', fake('github_pat_', 82)],
      ['a Slack token', fake('xoxb-', 40)],
      ['an AWS access key id', AWS_KEY_ID],
      ['a Google API key', fake('AIza', 35)],
      ['a Stripe live key', fake('sk_live_', 24)],
      ['a Stripe restricted key', fake('rk_live_', 24)],
      ['a JWT', JWT],
    ])('replaces %s and restores it', (_label, secret) => {
      const redactor = createRedactor();

      const redacted = redactor.redact(`use ${secret} for this`);

      expect(redacted).toBe('use [SECRET_1] for this');
      expect(redactor.restore(redacted, { secrets: true })).toBe(`use ${secret} for this`);
    });

    it.each([
      [
        'a Bearer header',
        `Authorization: Bearer ${fake('', 32)}`,
        'Authorization: Bearer [SECRET_1]',
      ],
      ['a password assignment', 'password=hunter2!', 'password=[SECRET_1]'],
      ['an env line', 'DB_PASSWORD=correct-horse-9', 'DB_PASSWORD=[SECRET_1]'],
      ['a YAML api_key', 'api_key: 7f9a8b6c5d4e', 'api_key: [SECRET_1]'],
      ['a quoted JSON token', '{"token": "tk 7f9a 8b6c"}', '{"token": "[SECRET_1]"}'],
      [
        'a URL password',
        'postgres://jarvis:s3cr3t@db.local:5432/app',
        'postgres://jarvis:[SECRET_1]@db.local:5432/app',
      ],
      [
        'a plain-word URL password',
        'https://bob:letmein@example.com/x',
        'https://bob:[SECRET_1]@example.com/x',
      ],
    ])('replaces only the value of %s', (_label, text, expected) => {
      const redactor = createRedactor();

      const redacted = redactor.redact(text);

      expect(redacted).toBe(expected);
      expect(redactor.restore(redacted, { secrets: true })).toBe(text);
    });

    it('replaces a whole PEM private key block, and a truncated one up to the end', () => {
      const key = [
        '-----BEGIN RSA PRIVATE KEY-----',
        fake('MIIEow', 64),
        fake('', 64),
        '-----END RSA PRIVATE KEY-----',
      ].join('\n');
      const truncated = `-----BEGIN OPENSSH PRIVATE KEY-----\n${fake('b3Bl', 70)}`;
      const redactor = createRedactor();

      const redacted = redactor.redact(`key:\n${key}\nthanks\nand also ${truncated}`);

      expect(redacted).toBe('key:\n[SECRET_1]\nthanks\nand also [SECRET_2]');
      expect(redactor.restore(redacted, { secrets: true })).toBe(
        `key:\n${key}\nthanks\nand also ${truncated}`,
      );
    });

    it('keeps secret placeholders but restores other kinds with { secrets: false }', () => {
      const redactor = createRedactor();
      const redacted = redactor.redact(`Mail alice@example.com my key ${OPENAI_KEY}`);

      const toolArguments = redactor.restore(redacted, { secrets: false });

      expect(toolArguments).toBe('Mail alice@example.com my key [SECRET_1]');
      expect(toolArguments).not.toContain(OPENAI_KEY);
    });

    it.each([
      ['docs placeholder after Bearer', 'Authorization: Bearer YOUR_ACCESS_TOKEN'],
      ['a variable reference', 'password=$DB_PASSWORD'],
      ['a template', 'api_key: {{ secrets.api_key }}'],
      ['a token count', 'max_tokens=4096'],
      ['a JSON null', '"token": null'],
      ['a shell working directory', 'PWD=/home/alice'],
      ['prose after a key word', 'The token: expires soon'],
    ])('leaves %s alone', (_label, text) => {
      expect(createRedactor().redact(text)).toBe(text);
    });
  });

  describe('personal data', () => {
    it.each([
      ['an email', 'alice.smith+jarvis@mail.example.co.uk', '[EMAIL_1]'],
      ['an international phone', '+1 (555) 123-4567', '[PHONE_1]'],
      ['a UK phone', '+44 20 7946 0958', '[PHONE_1]'],
      ['a German phone without spaces', '+4915112345678', '[PHONE_1]'],
      ['a tel: link', '[call](tel:+14155550123)', '[call](tel:[PHONE_1])'],
      ['a US national phone', '(555) 123-4567', '[PHONE_1]'],
      ['a dashed US phone', '555-123-4567', '[PHONE_1]'],
      ['a German national phone', '030 1234567', '[PHONE_1]'],
      ['a German phone with a slash', '0171/1234567', '[PHONE_1]'],
      ['a French phone', '06 12 34 56 78', '[PHONE_1]'],
      ['a spaced Visa number', '4111 1111 1111 1111', '[CARD_1]'],
      ['a dashed Mastercard number', '5555-5555-5555-4444', '[CARD_1]'],
      ['an Amex number', '3782 822463 10005', '[CARD_1]'],
      ['an unspaced card number', '5105105105105100', '[CARD_1]'],
      ['a spaced IBAN', 'DE89 3704 0044 0532 0130 00', '[IBAN_1]'],
      ['an unspaced IBAN', 'GB82WEST12345698765432', '[IBAN_1]'],
    ])('replaces %s and restores it', (_label, value, placeholder) => {
      const redactor = createRedactor();

      const redacted = redactor.redact(`It is ${value}, thanks.`);

      expect(redacted).toBe(`It is ${placeholder}, thanks.`);
      expect(redactor.restore(redacted, { secrets: false })).toBe(`It is ${value}, thanks.`);
    });

    it('stops a card number before the expiry and CVV that follow it', () => {
      expect(createRedactor().redact('card 4111 1111 1111 1111 12/27 123')).toBe(
        'card [CARD_1] 12/27 123',
      );
    });

    it.each([
      ['a card number failing Luhn', 'card 4111 1111 1111 1112'],
      ['a 16-digit order number failing Luhn', 'order 4000123412341235 shipped'],
      ['an IBAN with wrong check digits', 'IBAN DE88 3704 0044 0532 0130 00'],
      ['a 20-digit reference', 'ref 41111111111111111111'],
      ['the tail of a grouped reference', 'ref 1234 4111 1111 1111 1111'],
      ['a grouped reference longer than a card', 'ref 4111 1111 1111 1111 1234 5678'],
    ])('does not redact %s', (_label, text) => {
      expect(createRedactor().redact(text)).toBe(text);
    });
  });

  it.each([
    ['an ISO date', 'due 2024-03-15'],
    ['a timestamp', 'at 2024-03-15T10:30:00Z'],
    ['a US date with a time', 'on 03/15/2024 10:30'],
    ['a European date', 'am 15.03.2024'],
    ['times', 'from 09:30 to 17:45:10'],
    ['a time range', 'open 0900-1730'],
    ['a version string', 'version 1.2.3.4 and v10.20.30'],
    ['an IP address', 'host 192.168.100.200'],
    ['a UUID', 'id 550e8400-e29b-41d4-a716-446655440000'],
    ['a numeric UUID', 'id 12345678-1234-1234-1234-123456789012'],
    ['prices', 'costs $1,234.56 or €1.234,56'],
    ['a bare order number', 'order 12345678'],
    ['a short number and a year', 'room 4711 in 2024'],
    ['an image name', 'icon@2x.png'],
  ])('leaves %s alone', (_label, text) => {
    const redactor = createRedactor();

    expect(redactor.redact(text)).toBe(text);
    expect(redactor.counts()).toEqual({ secret: 0, email: 0, phone: 0, card: 0, iban: 0 });
  });

  it('gives the same value the same placeholder across calls and counts distinct values', () => {
    const redactor = createRedactor();

    const first = redactor.redact('alice@example.com, bob@example.com, 4111 1111 1111 1111');
    const second = redactor.redact('again Alice@Example.com and 4111-1111-1111-1111');

    expect(first).toBe('[EMAIL_1], [EMAIL_2], [CARD_1]');
    expect(second).toBe('again [EMAIL_1] and [CARD_1]');
    expect(redactor.counts()).toEqual({ secret: 0, email: 2, phone: 0, card: 1, iban: 0 });
  });

  it('restores the loose spellings models produce, every time they appear', () => {
    const redactor = createRedactor();
    redactor.redact('alice@example.com and +44 20 7946 0958');

    const restored = redactor.restore(
      'To [EMAIL_1], [ EMAIL_1 ], [email 1], [EMAIL\\_1] and [PHONE-1].',
      { secrets: true },
    );

    expect(restored).toBe(
      'To alice@example.com, alice@example.com, alice@example.com, alice@example.com and +44 20 7946 0958.',
    );
  });

  it('leaves placeholders it did not issue untouched', () => {
    const redactor = createRedactor();
    redactor.redact('alice@example.com');

    expect(redactor.restore('[EMAIL_2] [PHONE_1] [ SECRET_1 ]', { secrets: true })).toBe(
      '[EMAIL_2] [PHONE_1] [ SECRET_1 ]',
    );
  });

  it('never issues a number already present in the input, and never restores that literal', () => {
    const redactor = createRedactor();

    const redacted = redactor.redact('The template says [EMAIL_1]; mine is alice@example.com');

    expect(redacted).toBe('The template says [EMAIL_1]; mine is [EMAIL_2]');
    expect(redactor.restore(redacted, { secrets: true })).toBe(
      'The template says [EMAIL_1]; mine is alice@example.com',
    );
  });

  it('never issues a number the model made up', () => {
    const redactor = createRedactor();
    redactor.redact('alice@example.com');
    redactor.restore('I wrote to [EMAIL_2] already', { secrets: true });

    expect(redactor.redact('now bob@example.com')).toBe('now [EMAIL_3]');
    expect(redactor.restore('[EMAIL_2]', { secrets: true })).toBe('[EMAIL_2]');
  });

  it('does not redact its own placeholders again', () => {
    const redactor = createRedactor();
    const once = redactor.redact(`password=${OPENAI_KEY} and +1 (555) 123-4567`);

    expect(redactor.redact(once)).toBe(once);
    expect(redactor.counts()).toEqual({ secret: 1, email: 0, phone: 1, card: 0, iban: 0 });
  });

  it('round-trips a realistic paragraph', () => {
    const paragraph = [
      'Hi Jarvis, on 2024-03-15 at 14:30 please email jane.doe@example.org (or call +49 30 901820)',
      `about order 12345678. Pay the $1,234.56 from DE89 3704 0044 0532 0130 00, or card`,
      `5555 5555 5555 4444. The deploy (v1.2.3) needs GITHUB_TOKEN=${GITHUB_TOKEN} and`,
      `AWS ${AWS_KEY_ID}; the API uses Authorization: Bearer ${JWT}.`,
    ].join('\n');
    const redactor = createRedactor();

    const redacted = redactor.redact(paragraph);

    expect(redacted).toBe(
      [
        'Hi Jarvis, on 2024-03-15 at 14:30 please email [EMAIL_1] (or call [PHONE_1])',
        'about order 12345678. Pay the $1,234.56 from [IBAN_1], or card',
        '[CARD_1]. The deploy (v1.2.3) needs GITHUB_TOKEN=[SECRET_1] and',
        'AWS [SECRET_2]; the API uses Authorization: Bearer [SECRET_3].',
      ].join('\n'),
    );
    expect(redactor.counts()).toEqual({ secret: 3, email: 1, phone: 1, card: 1, iban: 1 });
    expect(redactor.restore(redacted, { secrets: true })).toBe(paragraph);
  });
});
