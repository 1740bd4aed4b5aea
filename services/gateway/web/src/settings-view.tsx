import type { Me, NotificationSettings, QuietHours, SettingsResponse } from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { useApp } from './app-context';
import { ErrorNotice, Loading, PageHeader } from './components';
import { DeliveriesList } from './deliveries-list';
import { InstructionsSetting } from './instructions-setting';
import { NotificationChannels } from './notification-channels';
import { ApiKeysSetting } from './settings-keys';
import { ThemeSetting } from './settings-theme';
import { UsageSetting } from './settings-usage';
import { TimeZoneSetting } from './time-zone-setting';
import { useMe } from './use-me';
import { useResource } from './use-resource';

const DEFAULT_QUIET_HOURS: QuietHours = { start: '22:00', end: '07:00' };

// Quiet hours on the user's clock: reminders, approval requests and tests still go through.
function QuietHoursSetting(props: { settings: NotificationSettings; timeZone: string }) {
  const { client } = useApp();
  const [saved, setSaved] = useState(props.settings.quietHours);
  const [isOn, setIsOn] = useState(saved !== null);
  const [hours, setHours] = useState(saved ?? DEFAULT_QUIET_HOURS);
  const [isSaving, setIsSaving] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [isDone, setIsDone] = useState(false);

  async function save(event: Event) {
    event.preventDefault();
    setIsSaving(true);
    setError(undefined);
    setIsDone(false);
    try {
      const { settings } = await client.send<SettingsResponse>(
        'PUT',
        '/v1/notifications/settings',
        { quietHours: isOn ? hours : null },
      );
      setSaved(settings.quietHours);
      setIsDone(true);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsSaving(false);
    }
  }

  return (
    <section class="card settings" aria-labelledby="quiet-hours-title" aria-busy={isSaving}>
      <h3 id="quiet-hours-title" class="channel-title">
        Quiet hours
      </h3>
      <p>
        {saved
          ? `From ${saved.start} to ${saved.end}, ${props.timeZone} time: only reminders and approval requests come through; the rest waits until the end.`
          : 'None: notifications come at any hour.'}
      </p>
      <form aria-label="Quiet hours" onSubmit={(event) => void save(event)}>
        <label class="check">
          <input
            type="checkbox"
            checked={isOn}
            onChange={(event) => setIsOn(event.currentTarget.checked)}
          />
          Keep quiet hours
        </label>
        {isOn ? (
          <div class="toolbar quiet-hours">
            <div class="field">
              <label for="quiet-start">From</label>
              <input
                id="quiet-start"
                type="time"
                value={hours.start}
                onInput={(event) => setHours({ ...hours, start: event.currentTarget.value })}
                required
              />
            </div>
            <div class="field">
              <label for="quiet-end">Until</label>
              <input
                id="quiet-end"
                type="time"
                value={hours.end}
                onInput={(event) => setHours({ ...hours, end: event.currentTarget.value })}
                required
              />
            </div>
          </div>
        ) : null}
        <div class="button-row">
          <button type="submit" disabled={isSaving}>
            Save quiet hours
          </button>
          {isDone ? <output class="muted">Saved.</output> : null}
        </div>
        <ErrorNotice message={error} />
      </form>
    </section>
  );
}

function Notifications({ timeZone }: { timeZone: string }) {
  const { client } = useApp();
  const settings = useResource('notification-settings', () =>
    client.get<SettingsResponse>('/v1/notifications/settings'),
  );
  // Moves on after each test, so that the history shows it.
  const [tests, setTests] = useState(0);
  return (
    <section
      id="settings-notifications"
      class="settings-group"
      aria-labelledby="notifications-title"
    >
      <h2 id="notifications-title">Notifications</h2>
      <p class="muted">
        Where Jarvis reaches you outside this page: reminders, results of scheduled work, mission
        reports and approval requests.
      </p>
      <ErrorNotice message={settings.error} />
      {settings.data ? (
        <QuietHoursSetting settings={settings.data.settings} timeZone={timeZone} />
      ) : null}
      <NotificationChannels timeZone={timeZone} onTested={() => setTests((value) => value + 1)} />
      <DeliveriesList timeZone={timeZone} generation={tests} />
    </section>
  );
}

// Every setting is on this one page; the links jump to its parts (a long page on a phone).
const PARTS = [
  { id: 'settings-appearance', label: 'Appearance' },
  { id: 'settings-time-zone', label: 'Time zone' },
  { id: 'settings-instructions', label: 'Instructions' },
  { id: 'settings-notifications', label: 'Notifications' },
  { id: 'channel-webpush-title', label: 'Push' },
  { id: 'settings-keys', label: 'API keys' },
  { id: 'settings-usage', label: 'Usage' },
] as const;

function PartsNav() {
  return (
    <nav class="settings-nav" aria-label="Settings sections">
      {PARTS.map((part) => (
        <a key={part.id} href={`#${part.id}`} class="tab">
          {part.label}
        </a>
      ))}
    </nav>
  );
}

export function SettingsView() {
  const me = useMe();
  // The answer of a PATCH /v1/me: the user as it is now.
  const [savedMe, setSavedMe] = useState<Me | undefined>();
  useEffect(() => setSavedMe(undefined), [me.data]);
  const user = savedMe ?? me.data?.user;
  return (
    <section class="page">
      <PageHeader title="Settings" />
      <PartsNav />
      <div id="settings-appearance">
        <ThemeSetting />
      </div>
      <ErrorNotice message={me.error} />
      {user ? (
        <>
          <div id="settings-time-zone">
            <TimeZoneSetting me={user} onSaved={setSavedMe} />
          </div>
          <div id="settings-instructions">
            <InstructionsSetting />
          </div>
          <Notifications timeZone={user.timeZone} />
        </>
      ) : me.error ? null : (
        <Loading what="your settings" />
      )}
      <div id="settings-keys">
        <ApiKeysSetting />
      </div>
      <div id="settings-usage">
        <UsageSetting />
      </div>
    </section>
  );
}
