import { describe, expect, it } from 'vitest';
import { checkCron } from './cron-spec';

describe('checkCron', () => {
  it.each([
    '*/5 * * * *',
    '0 9 * * 1-5',
    '0 0 * JAN,mar MON-FRI',
    '0 0 1,15 * *',
    '10-50/20 * * * 7',
    '0 0 29 2 *',
  ])('accepts %s', (cron) => {
    expect(checkCron(cron)).toBeUndefined();
  });

  it.each([
    ['61 * * * *', 'cron: minute 61 is out of range 0-59'],
    ['0 24 * * *', 'cron: hour 24 is out of range 0-23'],
    ['0 0 32 * *', 'cron: day-of-month 32 is out of range 1-31'],
    ['0 0 0 * *', 'cron: day-of-month 0 is out of range 1-31'],
    ['0 0 * 13 *', 'cron: month 13 is out of range 1-12'],
    ['0 0 * * 8', 'cron: day-of-week 8 is out of range 0-7'],
    ['* * * *', 'cron: expected 5 fields (minute hour day-of-month month day-of-week), got 4'],
    ['0 0 0 * * *', 'cron: expected 5 fields (minute hour day-of-month month day-of-week), got 6'],
    ['', 'cron: expected 5 fields (minute hour day-of-month month day-of-week), got 0'],
    [
      '@daily',
      "cron: '@daily' is not supported; use 5 fields (minute hour day-of-month month day-of-week)",
    ],
    [
      '@reboot',
      "cron: '@reboot' is not supported; use 5 fields (minute hour day-of-month month day-of-week)",
    ],
    ['0 0 L * *', "cron: day-of-month 'L' is not supported; use numbers 1-31, * , - /"],
    ['0 0 15W * *', "cron: day-of-month '15W' is not supported; use numbers 1-31, * , - /"],
    [
      '0 0 * * 5L',
      "cron: day-of-week '5L' is not supported; use numbers 0-7 or names SUN-SAT, * , - /",
    ],
    [
      '0 0 * * 1#2',
      "cron: day-of-week '1#2' is not supported; use numbers 0-7 or names SUN-SAT, * , - /",
    ],
    ['0 0 ? * *', "cron: day-of-month '?' is not supported; use numbers 1-31, * , - /"],
    ['H * * * *', "cron: minute 'H' is not supported; use numbers 0-59, * , - /"],
    [
      '0 0 * FOO *',
      "cron: month 'FOO' is not supported; use numbers 1-12 or names JAN-DEC, * , - /",
    ],
    ['5-2 * * * *', "cron: minute '5-2' is invalid (Invalid range: 5-2, min(5) > max(2))"],
    ['0 0 31 4 *', "cron: day-of-month '31' never occurs in April, so the rule would never fire"],
    [
      '0 0 30,31 2 *',
      "cron: day-of-month '30,31' never occurs in February, so the rule would never fire",
    ],
  ])('refuses %j: %s', (cron, message) => {
    expect(checkCron(cron)).toBe(message);
  });

  it('accepts a day that only some listed months have, and a weekday rule on a short month', () => {
    expect(checkCron('0 0 31 2,3 *')).toBeUndefined();
    expect(checkCron('0 0 31 4 MON')).toBeUndefined();
  });
});
