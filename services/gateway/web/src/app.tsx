import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { createApiClient } from './api-client';
import { AppContext, type AppServices } from './app-context';
import { ApprovalsView } from './approvals-view';
import { createChatStore } from './chat-store';
import { ChatView } from './chat-view';
import { AppLink, PageHeader } from './components';
import { forgetApiKey, loadApiKey, saveApiKey } from './key-store';
import { LoginView } from './login-view';
import { MemoryView } from './memory-view';
import { MissionDetailView, MissionsView } from './missions-view';
import { OfflineBanner } from './offline-banner';
import { SECTIONS, usePath } from './router';
import { RunDetailView, RunsView } from './runs-view';
import { ScheduleDetailView, SchedulesView } from './schedules-view';
import { SettingsView } from './settings-view';
import { StatusHeader } from './status-header';
import { createUserEventsFeed } from './user-events';

function NotFound() {
  return (
    <section class="page">
      <PageHeader title="Not found" />
      <p>
        There is nothing here. <AppLink href="/chat">Back to the chat</AppLink>
      </p>
    </section>
  );
}

function CurrentView({ path }: { path: string }) {
  const [, first, id] = path.split('/');
  const section = first || 'chat';
  if (section === 'chat') return <ChatView />;
  if (section === 'memory') return <MemoryView path={path} />;
  if (section === 'runs') return id ? <RunDetailView id={id} /> : <RunsView />;
  if (section === 'approvals') return <ApprovalsView />;
  if (section === 'missions') return id ? <MissionDetailView id={id} /> : <MissionsView />;
  if (section === 'schedules') return id ? <ScheduleDetailView id={id} /> : <SchedulesView />;
  if (section === 'settings') return <SettingsView />;
  return <NotFound />;
}

function Shell(props: { onForgetKey: () => void }) {
  const path = usePath();
  const main = useRef<HTMLElement>(null);
  const nav = useRef<HTMLElement>(null);
  const isFirstPath = useRef(true);
  const current =
    SECTIONS.find((section) => path === section.path || path.startsWith(`${section.path}/`)) ??
    SECTIONS[0];

  // After moving to another section, focus goes to its content, as a page load would put it.
  useEffect(() => {
    document.title = `${current.label} · Jarvis`;
    // On a phone the sections scroll sideways: keep the current one in sight.
    nav.current
      ?.querySelector('[aria-current="page"]')
      ?.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    if (isFirstPath.current) {
      isFirstPath.current = false;
      return;
    }
    main.current?.focus();
  }, [path, current.label]);

  return (
    <div class={`shell section-${current.path.slice(1)}`}>
      <a class="skip-link" href="#main">
        Skip to content
      </a>
      <header class="topbar">
        <span class="brand">Jarvis</span>
        <OfflineBanner />
        <StatusHeader />
        <button type="button" class="link-button forget" onClick={props.onForgetKey}>
          Forget key
        </button>
      </header>
      <nav class="nav" aria-label="Sections" ref={nav}>
        {SECTIONS.map((section) => (
          <AppLink
            key={section.path}
            href={section.path}
            class="nav-link"
            isCurrent={section.path === current.path}
          >
            {section.label}
          </AppLink>
        ))}
      </nav>
      <main id="main" ref={main} tabIndex={-1}>
        <CurrentView path={path} />
      </main>
    </div>
  );
}

export function App() {
  const [apiKey, setApiKey] = useState(loadApiKey());
  const [reason, setReason] = useState<string | undefined>();

  const services = useMemo<AppServices | undefined>(() => {
    if (!apiKey) return undefined;
    const client = createApiClient(apiKey, () => {
      forgetApiKey();
      setReason('Your key was not accepted any more. Sign in again.');
      setApiKey(undefined);
    });
    const events = createUserEventsFeed(client);
    return { client, events, chat: createChatStore(client, events) };
  }, [apiKey]);

  // One event stream while signed in, whichever section is open; closed with the key.
  useEffect(() => {
    services?.events.start();
    return () => services?.events.stop();
  }, [services]);

  if (!services) {
    return (
      <LoginView
        reason={reason}
        onSignIn={(key) => {
          saveApiKey(key);
          setReason(undefined);
          setApiKey(key);
        }}
      />
    );
  }
  return (
    <AppContext.Provider value={services}>
      <Shell
        onForgetKey={() => {
          forgetApiKey();
          setReason(undefined);
          setApiKey(undefined);
        }}
      />
    </AppContext.Provider>
  );
}
