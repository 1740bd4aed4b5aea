import type {
  Schedule,
  ScheduleFields,
  ScheduleResponse,
  SchedulesPreviewResponse,
} from '@jarvis/contracts';
import { useEffect, useMemo, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice } from './components';
import { formatInZone, timeZoneChoices, toWallTimeInput, wallTimeToInstant } from './time-zones';

const PREVIEW_DELAY_MS = 400;
const PREVIEW_COUNT = 5;
const HOUR_MS = 3_600_000;

type Repeat = 'once' | 'cron';

// The next whole hour, at least half an hour away: a sensible first guess for "when".
function defaultWhen(timeZone: string): string {
  const next = new Date(Math.ceil((Date.now() + HOUR_MS / 2) / HOUR_MS) * HOUR_MS);
  return toWallTimeInput(next, timeZone);
}

// The next times of a cron rule, asked of the scheduler itself (so the page and the scheduler
// never disagree about DST), a moment after the user stops typing.
function usePreview(cron: string, timeZone: string, isWanted: boolean) {
  const { client } = useApp();
  const [preview, setPreview] = useState<{ times: string[]; error?: string }>({ times: [] });

  useEffect(() => {
    if (!isWanted || !cron.trim()) {
      setPreview({ times: [] });
      return;
    }
    let isCurrent = true;
    const timer = window.setTimeout(() => {
      client
        .get<SchedulesPreviewResponse>(
          withQuery('/v1/schedules/preview', { cron: cron.trim(), timeZone, count: PREVIEW_COUNT }),
        )
        .then(
          ({ times }) => {
            if (isCurrent) setPreview({ times });
          },
          (failure: unknown) => {
            if (isCurrent) {
              setPreview({
                times: [],
                error: failure instanceof Error ? failure.message : String(failure),
              });
            }
          },
        );
    }, PREVIEW_DELAY_MS);
    return () => {
      isCurrent = false;
      window.clearTimeout(timer);
    };
  }, [cron, timeZone, isWanted]);

  return preview;
}

// A reminder made by hand: once at a date and time on the user's clock, or on a cron rule in a
// zone. Everything else (instructions, missions, intervals) the agent makes from the chat.
export function ScheduleForm(props: {
  userTimeZone: string;
  onCreated: (schedule: Schedule) => void;
}) {
  const { client } = useApp();
  const { userTimeZone } = props;
  const [text, setText] = useState('');
  const [repeat, setRepeat] = useState<Repeat>('once');
  const [when, setWhen] = useState(() => defaultWhen(userTimeZone));
  const [cron, setCron] = useState('0 9 * * 1-5');
  const [cronZone, setCronZone] = useState(userTimeZone);
  const [isSaving, setIsSaving] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [created, setCreated] = useState<Schedule | undefined>();
  const preview = usePreview(cron, cronZone, repeat === 'cron');
  const zones = useMemo(() => timeZoneChoices([userTimeZone]), [userTimeZone]);

  // A new zone of the user's becomes the form's default too, and "when" is on its clock.
  useEffect(() => {
    setCronZone(userTimeZone);
    setWhen(defaultWhen(userTimeZone));
  }, [userTimeZone]);

  function fields(): ScheduleFields | string {
    const action = { type: 'remind' as const, text: text.trim() };
    if (!action.text) return 'Write what to be reminded of.';
    if (repeat === 'cron') return { kind: 'cron', cron: cron.trim(), timeZone: cronZone, action };
    const at = wallTimeToInstant(when, userTimeZone);
    if (!at) return 'Choose a date and time.';
    return { kind: 'once', at: at.toISOString(), action };
  }

  async function submit(event: Event) {
    event.preventDefault();
    const body = fields();
    if (typeof body === 'string') {
      setError(body);
      return;
    }
    setIsSaving(true);
    setError(undefined);
    try {
      const { schedule } = await client.send<ScheduleResponse>('POST', '/v1/schedules', body);
      setCreated(schedule);
      setText('');
      props.onCreated(schedule);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsSaving(false);
    }
  }

  return (
    <details class="card add">
      <summary>New reminder</summary>
      <form onSubmit={(event) => void submit(event)} aria-label="New reminder">
        <div class="form-grid">
          <div class="field field-wide">
            <label for="new-reminder-text">Remind me to</label>
            <textarea
              id="new-reminder-text"
              rows={2}
              value={text}
              onInput={(event) => setText(event.currentTarget.value)}
              required
            />
          </div>
          <div class="field">
            <label for="new-reminder-repeat">Repeats</label>
            <select
              id="new-reminder-repeat"
              value={repeat}
              onChange={(event) =>
                setRepeat(event.currentTarget.value === 'cron' ? 'cron' : 'once')
              }
            >
              <option value="once">once</option>
              <option value="cron">on a cron rule</option>
            </select>
          </div>
          {repeat === 'once' ? (
            <div class="field">
              <label for="new-reminder-when">When ({userTimeZone})</label>
              <input
                id="new-reminder-when"
                type="datetime-local"
                value={when}
                onInput={(event) => setWhen(event.currentTarget.value)}
                required
              />
            </div>
          ) : (
            <>
              <div class="field">
                <label for="new-reminder-cron">Cron rule</label>
                <input
                  id="new-reminder-cron"
                  value={cron}
                  spellcheck={false}
                  autocomplete="off"
                  aria-describedby="new-reminder-cron-hint"
                  onInput={(event) => setCron(event.currentTarget.value)}
                  required
                />
                <p id="new-reminder-cron-hint" class="hint">
                  minute hour day-of-month month day-of-week
                </p>
              </div>
              <div class="field">
                <label for="new-reminder-zone">Time zone</label>
                <select
                  id="new-reminder-zone"
                  value={cronZone}
                  onChange={(event) => setCronZone(event.currentTarget.value)}
                >
                  {zones.map((zone) => (
                    <option key={zone} value={zone}>
                      {zone}
                    </option>
                  ))}
                </select>
              </div>
              <div class="field field-wide">
                <h3 id="new-reminder-preview-title">Next times</h3>
                {preview.error ? (
                  <ErrorNotice message={preview.error} />
                ) : (
                  <ol class="preview" aria-labelledby="new-reminder-preview-title">
                    {preview.times.map((time) => (
                      <li key={time}>{formatInZone(time, cronZone)}</li>
                    ))}
                  </ol>
                )}
              </div>
            </>
          )}
        </div>
        <div class="button-row">
          <button type="submit" class="primary" disabled={isSaving}>
            Add reminder
          </button>
          {created?.nextRunAt ? (
            <output class="muted">
              Added: next {formatInZone(created.nextRunAt, userTimeZone)}
            </output>
          ) : null}
        </div>
        <ErrorNotice message={error} />
      </form>
    </details>
  );
}
