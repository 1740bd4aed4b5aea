import type { Redactor } from '../redaction/redactor';

// Placeholders ("[EMAIL_1]") can arrive split across streamed pieces. Text is passed on as soon
// as it cannot be part of a placeholder; an open "[" with no "]" yet is held back (briefly: a
// placeholder is short, so a longer run is plain text).
const LONGEST_PLACEHOLDER = 24;

export type DeltaRestorer = { push(text: string): string; flush(): string };

export function createDeltaRestorer(redactor: Redactor): DeltaRestorer {
  let pending = '';
  const restore = (text: string) => redactor.restore(text, { secrets: true });
  return {
    push(text) {
      pending += text;
      const open = pending.lastIndexOf('[');
      const held =
        open >= 0 && !pending.includes(']', open) && pending.length - open <= LONGEST_PLACEHOLDER;
      const ready = held ? pending.slice(0, open) : pending;
      pending = held ? pending.slice(open) : '';
      return restore(ready);
    },
    flush() {
      const rest = pending;
      pending = '';
      return restore(rest);
    },
  };
}
