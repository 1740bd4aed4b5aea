import type {
  Mission,
  MissionDetail,
  MissionQuestion,
  MissionResponse,
  MissionStatus,
  MissionTask,
  MissionTaskStatus,
} from '@jarvis/contracts';
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

// A task asked the user something (ask_user) and waits: the answer, sent for this question by
// its id, lets it go on. Unanswered until expiresAt, it goes on without one. `isOneOfMany`: tasks
// in parallel each wait on a question, and the heading names the task.
function QuestionCard(props: {
  mission: MissionDetail;
  question: MissionQuestion;
  isOneOfMany: boolean;
  onAnswered: () => void;
}) {
  const { client } = useApp();
  const { question } = props;
  const task = props.mission.tasks.find((candidate) => candidate.id === question.taskId);
  const [text, setText] = useState('');
  const [isSending, setIsSending] = useState(false);
  const [error, setError] = useState<string | undefined>();

  async function answer(event: Event) {
    event.preventDefault();
    setIsSending(true);
    setError(undefined);
    try {
      await client.send<MissionResponse>(
        'POST',
        `/v1/missions/${encodeURIComponent(props.mission.id)}/answer`,
        { text, questionId: question.id },
      );
      props.onAnswered();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsSending(false);
    }
  }

  return (
    <section
      class="card question"
      aria-labelledby={`question-title-${question.id}`}
      aria-busy={isSending}
    >
      <h2 id={`question-title-${question.id}`}>
        Jarvis asks you{props.isOneOfMany && task ? ` (task ${task.number})` : ''}
      </h2>
      <p class="msg-text">{question.text}</p>
      <p class="muted">
        {task ? `For task ${task.number}, ${task.title}. ` : ''}Without an answer by{' '}
        {formatDateTime(question.expiresAt)}, the task goes on without one.
      </p>
      <form aria-label="Answer" onSubmit={(event) => void answer(event)}>
        <div class="field">
          <label for={`question-answer-${question.id}`}>Your answer</label>
          <textarea
            id={`question-answer-${question.id}`}
            rows={3}
            value={text}
            onInput={(event) => setText(event.currentTarget.value)}
            required
          />
        </div>
        <div class="button-row">
          <button type="submit" class="primary" disabled={isSending}>
            Send answer
          </button>
        </div>
        <ErrorNotice message={error} />
      </form>
    </section>
  );
}

// The tools and skills a task was given, when the plan named them (no tools named: it may use
// every tool that needs no approval).
function TaskUses({ task }: { task: MissionTask }) {
  const uses = [
    task.tools?.length ? `Tools: ${task.tools.join(', ')}` : '',
    task.skills.length > 0 ? `Skills: ${task.skills.join(', ')}` : '',
  ].filter(Boolean);
  return uses.length > 0 ? <p class="muted">{uses.join(' · ')}</p> : null;
}

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
      {detail.questions.length > 1 ? (
        <p class="muted">
          Several tasks wait for you. In the chat, your next message answers the first question
          below; here you can answer each.
        </p>
      ) : null}
      {detail.questions.map((question) => (
        <QuestionCard
          key={question.id}
          mission={detail}
          question={question}
          isOneOfMany={detail.questions.length > 1}
          onAnswered={mission.reload}
        />
      ))}
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
            <TaskUses task={task} />
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
