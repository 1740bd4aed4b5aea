import type { Me, MeResponse } from '@jarvis/contracts';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { useApp } from './app-context';
import { ErrorNotice } from './components';
import { browserTimeZone, timeZoneChoices } from './time-zones';

// The user's time zone: the one reminders and schedules are told in, stored on the server (not
// this browser's, which moves with the laptop). Until it is set, the server uses UTC, so the
// browser's zone is offered with one click.
export function TimeZoneSetting(props: { me: Me; onSaved: (me: Me) => void }) {
  const { client } = useApp();
  const { me } = props;
  const browserZone = browserTimeZone();
  const [choice, setChoice] = useState(me.timeZone);
  const [isSaving, setIsSaving] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const choices = useMemo(
    () => timeZoneChoices([me.timeZone, browserZone]),
    [me.timeZone, browserZone],
  );

  useEffect(() => setChoice(me.timeZone), [me.timeZone]);

  async function save(timeZone: string) {
    setIsSaving(true);
    setError(undefined);
    try {
      const { user } = await client.send<MeResponse>('PATCH', '/v1/me', { timeZone });
      props.onSaved(user);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsSaving(false);
    }
  }

  return (
    <section class="card settings" aria-labelledby="time-zone-title" aria-busy={isSaving}>
      <h2 id="time-zone-title">Time zone</h2>
      {me.isTimeZoneSet ? (
        <p>
          Times are told in <strong>{me.timeZone}</strong>.
        </p>
      ) : (
        <>
          <p>Not set yet: times are told in UTC.</p>
          <div class="button-row">
            <button
              type="button"
              class="primary"
              disabled={isSaving}
              onClick={() => void save(browserZone)}
            >
              Use {browserZone}
            </button>
            <span class="muted">this browser's zone</span>
          </div>
        </>
      )}
      <form
        class="toolbar zone-form"
        onSubmit={(event) => {
          event.preventDefault();
          void save(choice);
        }}
      >
        <div class="field">
          <label for="time-zone-choice">{me.isTimeZoneSet ? 'Change to' : 'Or choose'}</label>
          <select
            id="time-zone-choice"
            value={choice}
            onChange={(event) => setChoice(event.currentTarget.value)}
          >
            {choices.map((zone) => (
              <option key={zone} value={zone}>
                {zone}
              </option>
            ))}
          </select>
        </div>
        <button type="submit" disabled={isSaving || (me.isTimeZoneSet && choice === me.timeZone)}>
          Save zone
        </button>
      </form>
      <ErrorNotice message={error} />
    </section>
  );
}
