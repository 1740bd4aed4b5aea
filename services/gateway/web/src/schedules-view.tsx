import type {
  Me,
  Schedule,
  ScheduleAction,
  ScheduleResponse,
  ScheduleRun,
  SchedulesListResponse,
  SchedulesRunsResponse,
} from '@jarvis/contracts';
import { useEffect, useRef, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { AppLink, ErrorNotice, Loading, MetaList, PageHeader, StatusBadge } from './components';
import { truncate } from './format';
import { navigate } from './router';
import { ScheduleForm } from './schedule-form';
import { formatInZone } from './time-zones';
import { useMe } from './use-me';
import { useResource } from './use-resource';

const RUNS_PAGE = 30;

function describeAction(action: ScheduleAction): { label: string; text: string } {
  if (action.type === 'remind') return { label: 'Reminder', text: action.text };
  if (action.type === 'prompt') return { label: 'Ask Jarvis', text: action.instruction };
  return { label: 'Mission', text: action.objective };
}

function describeEvery(minutes: number): string {
  if (minutes % 1_440 === 0)
    return minutes === 1_440 ? 'every day' : `every ${minutes / 1_440} days`;
  if (minutes % 60 === 0) return minutes === 60 ? 'every hour' : `every ${minutes / 60} hours`;
  return `every ${minutes} min`;
}

function describeRule(schedule: Schedule): string {
  if (schedule.kind === 'cron') return `cron ${schedule.cron ?? ''} in ${schedule.timeZone}`;
  if (schedule.kind === 'interval') return describeEvery(schedule.everyMinutes ?? 0);
  return 'once';
}

function scheduleTitle(schedule: Schedule): string {
  return schedule.name ?? truncate(describeAction(schedule.action).text, 120);
}

// Calls back when one of the user's schedules fires: its next time and history move on by
// themselves. Subscribed once, calling the latest callback.
function useOnScheduleFired(onFired: (scheduleId: string) => void): void {
  const { events } = useApp();
  const latest = useRef(onFired);
  latest.current = onFired;
  useEffect(
    () =>
      events.subscribe((event) => {
        if (event.type === 'schedule_fired') latest.current(event.schedule.id);
      }),
    [events],
  );
}

function ScheduleActions(props: {
  schedule: Schedule;
  onChanged: (schedule: Schedule) => void;
  onDeleted: () => void;
}) {
  const { client } = useApp();
  const { schedule } = props;
  const [isBusy, setIsBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const path = `/v1/schedules/${encodeURIComponent(schedule.id)}`;

  async function run(action: () => Promise<void>) {
    setIsBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsBusy(false);
    }
  }

  const setStatus = (status: 'active' | 'paused') =>
    run(async () => {
      props.onChanged((await client.send<ScheduleResponse>('PATCH', path, { status })).schedule);
    });

  const remove = () => {
    if (!window.confirm(`Delete this schedule and its history?\n\n${scheduleTitle(schedule)}`)) {
      return;
    }
    void run(async () => {
      await client.send('DELETE', path);
      props.onDeleted();
    });
  };

  return (
    <>
      <div class="button-row" aria-busy={isBusy}>
        {schedule.status === 'active' ? (
          <button type="button" disabled={isBusy} onClick={() => void setStatus('paused')}>
            Pause
          </button>
        ) : null}
        {schedule.status === 'paused' ? (
          <button type="button" disabled={isBusy} onClick={() => void setStatus('active')}>
            Resume
          </button>
        ) : null}
        <button type="button" class="danger" disabled={isBusy} onClick={remove}>
          Delete
        </button>
      </div>
      <ErrorNotice message={error} />
    </>
  );
}

function NextRun({ schedule, timeZone }: { schedule: Schedule; timeZone: string }) {
  if (schedule.status === 'ended') return <span>ended</span>;
  if (schedule.status === 'paused') return <span>paused</span>;
  return <span class="next-run">{formatInZone(schedule.nextRunAt, timeZone)}</span>;
}

function ScheduleItem(props: { schedule: Schedule; timeZone: string; onDeleted: () => void }) {
  // The answer of a pause or resume shows at once, until the list itself is loaded again.
  const [schedule, setSchedule] = useState(props.schedule);
  useEffect(() => setSchedule(props.schedule), [props.schedule]);
  const action = describeAction(schedule.action);
  return (
    <li class="card schedule">
      <AppLink href={`/schedules/${schedule.id}`} class="row-link">
        <span class="row-title">
          <StatusBadge value={schedule.status} />
          <strong>{scheduleTitle(schedule)}</strong>
        </span>
        <span class="muted">
          {action.label} · {describeRule(schedule)}
        </span>
      </AppLink>
      {schedule.name ? <p class="schedule-text">{truncate(action.text, 300)}</p> : null}
      <p class="schedule-next">
        Next: <NextRun schedule={schedule} timeZone={props.timeZone} />
      </p>
      <ScheduleActions schedule={schedule} onChanged={setSchedule} onDeleted={props.onDeleted} />
    </li>
  );
}

// The zone is set on the Settings page, with the rest of the user's settings; here it is said,
// since every time on this page is read on it.
function ZoneNote({ me }: { me: Me }) {
  return (
    <p class="zone-note">
      {me.isTimeZoneSet ? (
        <>
          Times are told in <strong>{me.timeZone}</strong>.
        </>
      ) : (
        'Your time zone is not set yet: times are told in UTC.'
      )}{' '}
      <AppLink href="/settings">Change it in Settings</AppLink>
    </p>
  );
}

export function SchedulesView() {
  const { client } = useApp();
  const me = useMe();
  const list = useResource('schedules', () => client.get<SchedulesListResponse>('/v1/schedules'));
  useOnScheduleFired(() => list.reload());

  const user = me.data?.user;
  return (
    <section class="page">
      <PageHeader title="Schedules" />
      <p class="muted">
        Reminders and recurring work. Ask Jarvis in the chat ("remind me tomorrow at 9…"), or add a
        reminder here.
      </p>
      <ErrorNotice message={me.error} />
      {user ? (
        <>
          <ZoneNote me={user} />
          <ScheduleForm userTimeZone={user.timeZone} onCreated={list.reload} />
        </>
      ) : null}
      <h2>Your schedules</h2>
      <ErrorNotice message={list.error} />
      {(list.isLoading && !list.data) || !user ? <Loading what="schedules" /> : null}
      {list.data && list.data.schedules.length === 0 ? (
        <p class="empty">No schedules yet.</p>
      ) : null}
      {user ? (
        <ul class="cards" aria-label="Schedules">
          {list.data?.schedules.map((schedule) => (
            <ScheduleItem
              key={schedule.id}
              schedule={schedule}
              timeZone={user.timeZone}
              onDeleted={list.reload}
            />
          ))}
        </ul>
      ) : null}
    </section>
  );
}

function RunItem({ run, timeZone }: { run: ScheduleRun; timeZone: string }) {
  return (
    <li class="card">
      <p class="step-head">
        <StatusBadge value={run.status} />
        <span>{formatInZone(run.scheduledFor, timeZone)}</span>
        {run.messageId ? <AppLink href="/chat">Message in the chat</AppLink> : null}
        {run.runId ? <AppLink href={`/runs/${run.runId}`}>Run</AppLink> : null}
        {run.missionId ? <AppLink href={`/missions/${run.missionId}`}>Mission</AppLink> : null}
      </p>
      {run.reason ? <p class="muted">{run.reason.replaceAll('_', ' ')}</p> : null}
    </li>
  );
}

function RunHistory({ scheduleId, timeZone }: { scheduleId: string; timeZone: string }) {
  const { client } = useApp();
  const [runs, setRuns] = useState<ScheduleRun[]>([]);
  const [nextBefore, setNextBefore] = useState<string | undefined>();
  const [isLoading, setIsLoading] = useState(true);
  const [error, setError] = useState<string | undefined>();
  const [generation, setGeneration] = useState(0);
  useOnScheduleFired((id) => {
    if (id === scheduleId) setGeneration((value) => value + 1);
  });

  async function load(before?: string) {
    setIsLoading(true);
    setError(undefined);
    try {
      const page = await client.get<SchedulesRunsResponse>(
        withQuery(`/v1/schedules/${encodeURIComponent(scheduleId)}/runs`, {
          limit: RUNS_PAGE,
          before,
        }),
      );
      setRuns((current) => (before ? [...current, ...page.runs] : page.runs));
      setNextBefore(page.nextBefore);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsLoading(false);
    }
  }

  useEffect(() => {
    void load();
  }, [scheduleId, generation]);

  return (
    <>
      <h2 id="schedule-history-title">History</h2>
      <ErrorNotice message={error} />
      {!isLoading && runs.length === 0 && !error ? (
        <p class="empty">It has not come due yet.</p>
      ) : null}
      <ol class="cards" aria-labelledby="schedule-history-title">
        {runs.map((run) => (
          <RunItem key={run.id} run={run} timeZone={timeZone} />
        ))}
      </ol>
      {isLoading ? <Loading what="the history" /> : null}
      {nextBefore && !isLoading ? (
        <button type="button" onClick={() => void load(nextBefore)}>
          Load more
        </button>
      ) : null}
    </>
  );
}

export function ScheduleDetailView({ id }: { id: string }) {
  const { client } = useApp();
  const me = useMe();
  const loaded = useResource(id, () =>
    client.get<ScheduleResponse>(`/v1/schedules/${encodeURIComponent(id)}`),
  );
  const [changed, setChanged] = useState<Schedule | undefined>();
  useOnScheduleFired((firedId) => {
    if (firedId === id) loaded.reload();
  });
  useEffect(() => setChanged(undefined), [loaded.data]);

  const schedule = changed ?? loaded.data?.schedule;
  const user = me.data?.user;
  if (!schedule || !user) {
    return (
      <section class="page">
        <PageHeader title="Schedule" />
        <ErrorNotice message={loaded.error ?? me.error} />
        {loaded.error || me.error ? null : <Loading what="the schedule" />}
      </section>
    );
  }
  const action = describeAction(schedule.action);
  const zone = user.timeZone;
  return (
    <section class="page">
      <PageHeader title="Schedule">
        <AppLink href="/schedules">All schedules</AppLink>
      </PageHeader>
      <div class="card">
        {schedule.name ? <h2 class="schedule-name">{schedule.name}</h2> : null}
        <p class="objective">
          {action.label}: {action.text}
        </p>
        <MetaList
          items={[
            ['Status', <StatusBadge key="status" value={schedule.status} />],
            ['Rule', describeRule(schedule)],
            ['Next', <NextRun key="next" schedule={schedule} timeZone={zone} />],
            [
              'Runs',
              schedule.maxRuns ? `${schedule.runCount} of ${schedule.maxRuns}` : schedule.runCount,
            ],
            ['If missed', schedule.missedPolicy.replaceAll('_', ' ')],
            ['Starts', formatInZone(schedule.startAt, zone)],
            ['Ends', formatInZone(schedule.endAt, zone)],
            [
              'Made',
              `${formatInZone(schedule.createdAt, zone)}${schedule.createdBy === 'model' ? ' by Jarvis' : ''}`,
            ],
          ]}
        />
        <ScheduleActions
          schedule={schedule}
          onChanged={setChanged}
          onDeleted={() => navigate('/schedules')}
        />
      </div>
      <RunHistory scheduleId={schedule.id} timeZone={zone} />
    </section>
  );
}
