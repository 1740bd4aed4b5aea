// How numbers, times and tool arguments read on screen. Pure, so they are unit-tested.

export function truncate(text: string, maxChars: number): string {
  return text.length <= maxChars ? text : `${text.slice(0, Math.max(0, maxChars - 1))}…`;
}

function summariseValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(truncate(value, 40));
  if (typeof value === 'number' || typeof value === 'boolean' || value === null) {
    return String(value);
  }
  if (Array.isArray(value)) return `[${value.length} item${value.length === 1 ? '' : 's'}]`;
  if (typeof value === 'object') return '{…}';
  return typeof value;
}

// One line a person can scan: `path: "notes/a.md", limit: 5`. The full arguments stay
// available elsewhere (the run's steps).
export function summariseArguments(args: Record<string, unknown>, maxChars = 90): string {
  const parts = Object.entries(args).map(([key, value]) => `${key}: ${summariseValue(value)}`);
  return truncate(parts.join(', '), maxChars);
}

export function formatDuration(ms: number): string {
  if (ms < 1_000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1_000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  const seconds = Math.round((ms % 60_000) / 1_000);
  return `${minutes} min ${seconds} s`;
}

export function formatCost(usd: number): string {
  if (usd === 0) return '$0';
  return `$${usd < 0.01 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

export function formatTokens(usage: { inputTokens: number; outputTokens: number }): string {
  return `${usage.inputTokens.toLocaleString('en')} in · ${usage.outputTokens.toLocaleString('en')} out`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1_024) return `${bytes} B`;
  if (bytes < 1_024 * 1_024) return `${(bytes / 1_024).toFixed(1)} KB`;
  return `${(bytes / (1_024 * 1_024)).toFixed(1)} MB`;
}

const DATE_TIME = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function formatDateTime(iso: string | null | undefined): string {
  if (!iso) return '—';
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : DATE_TIME.format(date);
}

// Pretty JSON for a <pre>: tool arguments, step input and output.
export function formatJson(value: unknown): string {
  return JSON.stringify(value, null, 2) ?? String(value);
}

// A 400 names its field first ("url: Invalid URL", "smtp.port: …"; through the RPC the tools
// service answers, "channel.url: …"): such a message goes next to that field of the form, any
// other above the form's buttons.
export function splitFieldError(
  message: string,
  fields: readonly string[],
): { field?: string; text: string } {
  const match = /^([\w.]+): (.+)$/s.exec(message);
  if (!match?.[1] || !match[2]) return { text: message };
  const field = match[1].replace(/^channel\./, '');
  return fields.includes(field) ? { field, text: match[2] } : { text: message };
}
