import type {
  RunStatus,
  RunStep,
  RunSummary,
  RunsGetResponse,
  RunsListResponse,
} from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import {
  AppLink,
  ErrorNotice,
  JsonBlock,
  Loading,
  MetaList,
  PageHeader,
  StatusBadge,
} from './components';
import { formatCost, formatDateTime, formatDuration, formatTokens } from './format';
import { RunTimeline } from './run-timeline';
import { asScreenshot, Screenshot } from './screenshot';
import { traceExploreUrl } from './trace-link';
import { useMe } from './use-me';
import { useResource } from './use-resource';
import { ToolFiles } from './workspace-file';
import { asToolFiles } from './workspace-files';

const STATUSES: RunStatus[] = ['queued', 'running', 'waiting_approval', 'completed', 'failed'];
const PAGE = 30;

function isRunStatus(value: string): value is RunStatus {
  return STATUSES.some((status) => status === value);
}

function CopyButton({ text }: { text: string }) {
  const [isCopied, setIsCopied] = useState(false);
  return (
    <button
      type="button"
      class="small"
      onClick={() =>
        navigator.clipboard?.writeText(text).then(
          () => setIsCopied(true),
          () => setIsCopied(false),
        )
      }
    >
      {isCopied ? 'Copied' : 'Copy'}
    </button>
  );
}

// A tool step that took a screenshot shows it, outside the folded input and output.
function StepScreenshot({ step }: { step: RunStep }) {
  const shot = step.kind === 'tool' ? asScreenshot(step.output.screenshot) : undefined;
  return shot ? <Screenshot shot={shot} label={`Screenshot by ${step.name}`} /> : null;
}

// A tool step that wrote workspace files (run_code) shows its pictures and links the rest.
function StepFiles({ step }: { step: RunStep }) {
  const files = step.kind === 'tool' ? asToolFiles(step.output.files) : undefined;
  return files ? <ToolFiles files={files} toolName={step.name} /> : null;
}

export function RunDetailView({ id }: { id: string }) {
  const { client } = useApp();
  const run = useResource(id, () =>
    client.get<RunsGetResponse>(`/v1/runs/${encodeURIComponent(id)}`),
  );
  // The install's Grafana, if it has one: the trace id becomes a link there.
  const grafanaUrl = useMe().data?.grafanaUrl;
  if (!run.data) {
    return (
      <section class="page">
        <PageHeader title="Run" />
        {run.error ? <ErrorNotice message={run.error} /> : <Loading what="the run" />}
      </section>
    );
  }
  const detail = run.data.run;
  return (
    <section class="page">
      <PageHeader title="Run">
        <AppLink href="/runs">All runs</AppLink>
      </PageHeader>
      <div class="card">
        <MetaList
          items={[
            ['Status', <StatusBadge key="status" value={detail.status} />],
            [
              'Trace id',
              detail.traceId ? (
                <span class="trace">
                  <code>{detail.traceId}</code> <CopyButton text={detail.traceId} />
                  {grafanaUrl ? (
                    <a
                      class="trace-link"
                      href={traceExploreUrl(grafanaUrl, detail.traceId, {
                        from: detail.startedAt ?? detail.createdAt,
                        to: detail.finishedAt,
                      })}
                      target="_blank"
                      rel="noopener noreferrer"
                    >
                      Open trace in Grafana
                    </a>
                  ) : null}
                </span>
              ) : (
                '—'
              ),
            ],
            ['Kind', detail.kind === 'turn' ? 'chat turn' : 'mission task'],
            ['Model', detail.model ? `${detail.provider}/${detail.model}` : '—'],
            ['Tokens', formatTokens(detail.usage)],
            ['Cost', formatCost(detail.costUsd)],
            ['Started', formatDateTime(detail.startedAt ?? detail.createdAt)],
            ['Finished', formatDateTime(detail.finishedAt)],
            ['Attempts', detail.attempts],
          ]}
        />
        {detail.missionId ? (
          <p>
            Part of <AppLink href={`/missions/${detail.missionId}`}>a mission</AppLink>
          </p>
        ) : null}
        {detail.error ? (
          <ErrorNotice message={`${detail.error.code}: ${detail.error.message}`} />
        ) : null}
        <details>
          <summary>Context</summary>
          <JsonBlock value={detail.context} />
        </details>
      </div>
      <h2>Steps</h2>
      {detail.steps.length === 0 ? <p class="empty">No steps recorded.</p> : null}
      <RunTimeline steps={detail.steps} />
      <ol class="cards steps" aria-label="Steps">
        {detail.steps.map((step) => (
          <li key={step.id} class={`card step step-${step.status}`}>
            <p class="step-head">
              <span class="step-seq">
                {step.attempt > 1 ? `${step.attempt}.` : ''}
                {step.seq}
              </span>
              <StatusBadge value={step.kind} />
              <strong class="step-name">{step.name}</strong>
              <StatusBadge value={step.status} />
              <span class="muted">{formatDuration(step.durationMs)}</span>
              {step.usage.inputTokens + step.usage.outputTokens > 0 ? (
                <span class="muted">{formatTokens(step.usage)}</span>
              ) : null}
              {step.costUsd > 0 ? <span class="muted">{formatCost(step.costUsd)}</span> : null}
            </p>
            {step.error ? <ErrorNotice message={step.error} /> : null}
            <StepScreenshot step={step} />
            <StepFiles step={step} />
            <details>
              <summary>Input and output</summary>
              <h3>Input</h3>
              <JsonBlock value={step.input} />
              <h3>Output</h3>
              <JsonBlock value={step.output} />
            </details>
          </li>
        ))}
      </ol>
    </section>
  );
}

export function RunsView() {
  const { client } = useApp();
  const [status, setStatus] = useState<RunStatus | ''>('');
  const [runs, setRuns] = useState<RunSummary[]>([]);
  const [nextBefore, setNextBefore] = useState<string | undefined>();
  const [isLoading, setIsLoading] = useState(true);
  const [error, setError] = useState<string | undefined>();

  async function load(before?: string) {
    setIsLoading(true);
    setError(undefined);
    try {
      const page = await client.get<RunsListResponse>(
        withQuery('/v1/runs', { limit: PAGE, status, before }),
      );
      setRuns((current) => (before ? [...current, ...page.runs] : page.runs));
      setNextBefore(page.nextBefore);
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsLoading(false);
    }
  }

  // Reloads from the first page when the filter changes.
  useEffect(() => {
    void load();
  }, [status]);

  return (
    <section class="page">
      <PageHeader title="Runs">
        <div class="field inline">
          <label for="runs-status">Status</label>
          <select
            id="runs-status"
            value={status}
            onChange={(event) => {
              const value = event.currentTarget.value;
              setStatus(isRunStatus(value) ? value : '');
            }}
          >
            <option value="">any</option>
            {STATUSES.map((value) => (
              <option key={value} value={value}>
                {value.replaceAll('_', ' ')}
              </option>
            ))}
          </select>
        </div>
      </PageHeader>
      <ErrorNotice message={error} />
      {!isLoading && runs.length === 0 && !error ? <p class="empty">No runs yet.</p> : null}
      <ul class="cards" aria-label="Runs">
        {runs.map((run) => (
          <li key={run.id} class="card">
            <AppLink href={`/runs/${run.id}`} class="row-link">
              <span class="row-title">
                <StatusBadge value={run.status} />
                <span>{run.kind === 'turn' ? 'Chat turn' : 'Mission task'}</span>
                <span class="muted">{formatDateTime(run.createdAt)}</span>
              </span>
              <span class="muted">
                {run.steps} steps · {formatTokens(run.usage)} · {formatCost(run.costUsd)}
                {run.model ? ` · ${run.model}` : ''}
              </span>
            </AppLink>
          </li>
        ))}
      </ul>
      {isLoading ? <Loading what="runs" /> : null}
      {nextBefore && !isLoading ? (
        <button type="button" onClick={() => void load(nextBefore)}>
          Load more
        </button>
      ) : null}
    </section>
  );
}
