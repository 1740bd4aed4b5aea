import { useEffect, useState } from 'preact/hooks';

// Client-side routes on the History API. The gateway answers index.html for each of these
// top-level paths (services/gateway/src/routes/web-ui.ts lists them: keep the two in step).
export const SECTIONS = [
  { path: '/chat', label: 'Chat' },
  { path: '/memory', label: 'Memory' },
  { path: '/runs', label: 'Runs' },
  { path: '/approvals', label: 'Approvals' },
  { path: '/missions', label: 'Missions' },
  { path: '/schedules', label: 'Schedules' },
  { path: '/settings', label: 'Settings' },
] as const;

const listeners = new Set<() => void>();

export function navigate(path: string): void {
  if (path === window.location.pathname) return;
  window.history.pushState(null, '', path);
  for (const listener of listeners) listener();
}

export function usePath(): string {
  const [path, setPath] = useState(window.location.pathname);
  useEffect(() => {
    const update = () => setPath(window.location.pathname);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return path;
}

// A plain left click moves within the app; a modified click (new tab) keeps the browser's way.
export function followLink(event: MouseEvent, path: string): void {
  if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) {
    return;
  }
  event.preventDefault();
  navigate(path);
}
