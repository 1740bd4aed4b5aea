import { useEffect, useState } from 'preact/hooks';
import { StatusBadge } from './components';

type Health = {
  state: 'checking' | 'online' | 'degraded' | 'offline';
  checks: Record<string, boolean>;
  checkedAt?: Date;
};

const POLL_MS = 20_000;

// The gateway's /readyz is public: its dependencies (NATS, Postgres) and whether it is ready.
// Not /metrics: it is for Prometheus on the compose network, and Traefik does not route it.
async function readHealth(): Promise<Health> {
  let response: Response;
  try {
    response = await fetch('/readyz', { headers: { accept: 'application/json' } });
  } catch {
    return { state: 'offline', checks: {}, checkedAt: new Date() };
  }
  const body = (await response.json().catch(() => ({}))) as { checks?: Record<string, boolean> };
  return {
    state: response.ok ? 'online' : 'degraded',
    checks: body.checks ?? {},
    checkedAt: new Date(),
  };
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
        {health.checkedAt ? (
          <p class="muted">Checked {health.checkedAt.toLocaleTimeString()}</p>
        ) : null}
      </div>
    </details>
  );
}
