import { useEffect, useState } from 'preact/hooks';
import { StatusBadge } from './components';
import { formatBytes } from './format';

type Health = {
  state: 'checking' | 'online' | 'degraded' | 'offline';
  checks: Record<string, boolean>;
  residentBytes?: number;
  checkedAt?: Date;
};

const POLL_MS = 20_000;
const RESIDENT_MEMORY = /^process_resident_memory_bytes(?:\{[^}]*\})?\s+([0-9.e+]+)/m;

// The gateway's /readyz is public: its dependencies (NATS, Postgres) and whether it is ready.
// /metrics gives its memory use where it is reachable; a gateway that closes it shows none.
async function readHealth(): Promise<Health> {
  let response: Response;
  try {
    response = await fetch('/readyz', { headers: { accept: 'application/json' } });
  } catch {
    return { state: 'offline', checks: {}, checkedAt: new Date() };
  }
  const body = (await response.json().catch(() => ({}))) as { checks?: Record<string, boolean> };
  const health: Health = {
    state: response.ok ? 'online' : 'degraded',
    checks: body.checks ?? {},
    checkedAt: new Date(),
  };
  const metrics = await fetch('/metrics')
    .then((answer) => (answer.ok ? answer.text() : ''))
    .catch(() => '');
  const resident = RESIDENT_MEMORY.exec(metrics)?.[1];
  if (resident) health.residentBytes = Number(resident);
  return health;
}

export function StatusHeader() {
  const [health, setHealth] = useState<Health>({ state: 'checking', checks: {} });

  useEffect(() => {
    let isMounted = true;
    const refresh = () =>
      void readHealth().then((next) => {
        if (isMounted) setHealth(next);
      });
    refresh();
    const timer = window.setInterval(refresh, POLL_MS);
    window.addEventListener('online', refresh);
    window.addEventListener('offline', refresh);
    return () => {
      isMounted = false;
      window.clearInterval(timer);
      window.removeEventListener('online', refresh);
      window.removeEventListener('offline', refresh);
    };
  }, []);

  const entries = Object.entries(health.checks);
  return (
    <details class="status">
      <summary aria-label={`Jarvis is ${health.state}. Show details`}>
        <span class={`dot dot-${health.state}`} aria-hidden="true" />
        <span class="status-text">{health.state}</span>
      </summary>
      <div class="status-panel">
        <p>
          Gateway: <StatusBadge value={health.state} />
        </p>
        {entries.length > 0 ? (
          <ul class="plain">
            {entries.map(([name, isUp]) => (
              <li key={name}>
                {name}: <StatusBadge value={isUp ? 'ok' : 'error'} label={isUp ? 'up' : 'down'} />
              </li>
            ))}
          </ul>
        ) : null}
        {health.residentBytes ? <p>Gateway memory: {formatBytes(health.residentBytes)}</p> : null}
        {health.checkedAt ? (
          <p class="muted">Checked {health.checkedAt.toLocaleTimeString()}</p>
        ) : null}
      </div>
    </details>
  );
}
