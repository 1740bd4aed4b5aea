import type { ComponentChildren } from 'preact';
import { formatJson } from './format';
import { followLink } from './router';

// Everything here renders server text as text nodes: replies, tool output and memory are
// untrusted, and none of it is ever parsed as HTML.

export function ErrorNotice({ message }: { message: string | undefined }) {
  if (!message) return null;
  return (
    <p class="notice notice-error" role="alert">
      {message}
    </p>
  );
}

const TONES: Record<string, 'ok' | 'bad' | 'active' | 'warn'> = {
  ok: 'ok',
  completed: 'ok',
  approved: 'ok',
  ready: 'ok',
  online: 'ok',
  active: 'ok',
  fired: 'ok',
  sent: 'ok',
  failed: 'bad',
  error: 'bad',
  denied: 'bad',
  offline: 'bad',
  running: 'active',
  queued: 'active',
  retrying: 'active',
  pending: 'active',
  planning: 'active',
  reporting: 'active',
  streaming: 'active',
  deciding: 'active',
  waiting_approval: 'warn',
  degraded: 'warn',
  expired: 'warn',
  skipped: 'warn',
  missed: 'warn',
  paused: 'warn',
  held: 'warn',
  cancelled: 'warn',
  forgotten: 'warn',
  replaced: 'warn',
  waiting: 'warn',
  undone: 'warn',
  // What a turn's extraction did to a fact (the Learned tab).
  add: 'ok',
  update: 'active',
  invalidate: 'warn',
};

export function StatusBadge({ value, label }: { value: string; label?: string }) {
  const tone = TONES[value] ?? 'neutral';
  return <span class={`badge badge-${tone}`}>{label ?? value.replaceAll('_', ' ')}</span>;
}

export function AppLink(props: {
  href: string;
  class?: string;
  isCurrent?: boolean;
  children: ComponentChildren;
}) {
  return (
    <a
      href={props.href}
      class={props.class}
      aria-current={props.isCurrent ? 'page' : undefined}
      onClick={(event) => followLink(event, props.href)}
    >
      {props.children}
    </a>
  );
}

export function JsonBlock({ value }: { value: unknown }) {
  return <pre class="code">{formatJson(value)}</pre>;
}

export function MetaList({ items }: { items: [string, ComponentChildren][] }) {
  return (
    <dl class="meta">
      {items.map(([term, detail]) => (
        <div key={term}>
          <dt>{term}</dt>
          <dd>{detail}</dd>
        </div>
      ))}
    </dl>
  );
}

export function Loading({ what }: { what: string }) {
  return <output class="muted loading">Loading {what}…</output>;
}

export function PageHeader(props: { title: string; children?: ComponentChildren }) {
  return (
    <div class="page-header">
      <h1>{props.title}</h1>
      {props.children ? <div class="page-actions">{props.children}</div> : null}
    </div>
  );
}
