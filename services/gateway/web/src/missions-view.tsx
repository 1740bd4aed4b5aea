import type { Mission, MissionResponse, MissionStatus, MissionTaskStatus } from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { AppLink, ErrorNotice, Loading, MetaList, PageHeader, StatusBadge } from './components';
import { formatCost, formatDateTime, formatTokens, truncate } from './format';
import { useResource } from './use-resource';
import { WorkspacePanel } from './workspace-panel';

const ACTIVE: MissionStatus[] = ['planning', 'running', 'reporting'];
const REFRESH_MS = 5_000;
// A task that ended may have written files: the files panel reads the workspace again.
const FINISHED: MissionTaskStatus[] = ['completed', 'failed'];

export function MissionDetailView({ id }: { id: string }) {
  const { client } = useApp();
  const [error, setError] = useState<string | undefined>();
  const mission = useResource(id, () =>
    client.get<MissionResponse>(`/v1/missions/${encodeURIComponent(id)}`),
  );
  const isActive = mission.data ? ACTIVE.includes(mission.data.mission.status) : false;

  // A running mission changes by itself: follow it until it ends.
  useEffect(() => {
    if (!isActive) return;
    const timer = window.setInterval(mission.reload, REFRESH_MS);
    return () => window.clearInterval(timer);
  }, [isActive, mission.reload]);

  if (!mission.data) {
    return (
      <section class="page">
        <PageHeader title="Mission" />
        {mission.error ? <ErrorNotice message={mission.error} /> : <Loading what="the mission" />}
      </section>
    );
  }
  const detail = mission.data.mission;

  const cancel = async () => {
    if (!window.confirm('Cancel this mission? Tasks not started are skipped.')) return;
    try {
      await client.send('POST', `/v1/missions/${encodeURIComponent(id)}/cancel`);
      mission.reload();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    }
  };

  return (
    <section class="page">
      <PageHeader title="Mission">
        <AppLink href="/missions">All missions</AppLink>
      </PageHeader>
      <div class="card">
        <p class="objective">{detail.objective}</p>
        <MetaList
          items={[
            ['Status', <StatusBadge key="status" value={detail.status} />],
            [
              'Tokens',
              `${formatTokens(detail.usage)} (cap ${detail.limits.maxTokens.toLocaleString('en')})`,
            ],
            ['Cost', `${formatCost(detail.costUsd)} (cap ${formatCost(detail.limits.maxCostUsd)})`],
            ['Started', formatDateTime(detail.createdAt)],
            ['Finished', formatDateTime(detail.finishedAt)],
          ]}
        />
        {detail.error ? <ErrorNotice message={detail.error.message} /> : null}
        <ErrorNotice message={error} />
        {isActive ? (
          <button type="button" class="danger" onClick={() => void cancel()}>
            Cancel mission
          </button>
        ) : null}
      </div>
      <h2>Tasks</h2>
      <ol class="cards" aria-label="Tasks">
        {detail.tasks.map((task) => (
          <li key={task.id} class="card">
            <p class="step-head">
              <span class="step-seq">{task.number}</span>
              <strong>{task.title}</strong>
              <StatusBadge value={task.status} />
              {task.dependsOn.length > 0 ? (
                <span class="muted">after {task.dependsOn.join(', ')}</span>
              ) : null}
              {task.runId ? <AppLink href={`/runs/${task.runId}`}>Run</AppLink> : null}
            </p>
            {task.result ? <p class="msg-text">{task.result}</p> : null}
            {task.error ? <ErrorNotice message={task.error.message} /> : null}
          </li>
        ))}
      </ol>
      <h2>Files</h2>
      <WorkspacePanel
        kind="mission"
        id={detail.id}
        title="The mission's workspace"
        isOpenAtFirst
        version={detail.tasks.filter((task) => FINISHED.includes(task.status)).length}
      />
      {detail.report ? (
        <>
          <h2>Report</h2>
          <div class="card">
            <p class="msg-text">{detail.report}</p>
          </div>
        </>
      ) : null}
    </section>
  );
}

export function MissionsView() {
  const { client } = useApp();
  const list = useResource('missions', () =>
    client.get<{ missions: Mission[] }>(withQuery('/v1/missions', { limit: 50 })),
  );
  return (
    <section class="page">
      <PageHeader title="Missions" />
      <p class="muted">Work Jarvis does in the background. Ask for one in the chat.</p>
      <ErrorNotice message={list.error} />
      {list.isLoading && !list.data ? <Loading what="missions" /> : null}
      {list.data && list.data.missions.length === 0 ? <p class="empty">No missions yet.</p> : null}
      <ul class="cards" aria-label="Missions">
        {list.data?.missions.map((mission) => (
          <li key={mission.id} class="card">
            <AppLink href={`/missions/${mission.id}`} class="row-link">
              <span class="row-title">
                <StatusBadge value={mission.status} />
                <span>{truncate(mission.objective, 120)}</span>
              </span>
              <span class="muted">
                {formatDateTime(mission.createdAt)} · {formatCost(mission.costUsd)}
              </span>
            </AppLink>
          </li>
        ))}
      </ul>
    </section>
  );
}
