import type {
  Approval,
  ApprovalRequest,
  ChatResponse,
  HistoryMessage,
  MemoryConversationsListResponse,
  MemoryMessagesListResponse,
  RunStep,
  RunsGetResponse,
  ToolFile,
  ToolScreenshot,
  Usage,
  UserEvent,
} from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { type ApiClient, ApiError, withQuery } from './api-client';
import { sendChatMessage } from './chat-stream';
import { summariseArguments } from './format';
import { asScreenshot } from './screenshot';
import type { UserEventsFeed } from './user-events';
import { asToolFiles } from './workspace-files';

type ToolStep = {
  id: string;
  name: string;
  summary: string;
  status: 'running' | 'ok' | 'error';
  durationMs?: number;
  // What the tool took a picture of (browser_screenshot), shown under the steps.
  screenshot?: ToolScreenshot;
  // The files it wrote in the workspace (run_code), shown or linked under the steps.
  files?: ToolFile[];
};

export type ApprovalCard = ApprovalRequest & {
  state: 'pending' | 'deciding' | 'approved' | 'denied' | 'expired';
  error?: string;
};

type UserEntry = { kind: 'user'; key: string; text: string; createdAt: string };
export type AssistantEntry = {
  kind: 'assistant';
  key: string;
  text: string;
  createdAt: string;
  status: 'streaming' | 'done' | 'failed';
  tools: ToolStep[];
  // Known once a streamed turn is accepted; cancels it while it runs.
  turnId?: string;
  runId?: string;
  usage?: Usage;
  approval?: ApprovalCard;
  error?: string;
  // A reminder that arrived while the chat was open: the schedule that posted it.
  reminderScheduleId?: string;
};
export type ChatEntry = UserEntry | AssistantEntry;

// idle: not asked yet; unavailable: this gateway has no history API, so the log holds this
// session's messages only.
type HistoryState = 'idle' | 'loading' | 'loaded' | 'unavailable' | 'failed';

export type ChatState = {
  entries: ChatEntry[];
  isSending: boolean;
  history: HistoryState;
  // Cursor of the next older page of history (a message sequence); absent when there is none.
  olderCursor?: number;
  // The conversation the chat shows, once known (none before the user's first message): its
  // workspace is the one the chat's files panel shows.
  conversationId?: string;
  notice?: string;
};

type DecisionResponse = ChatResponse & { decided: Approval };

export type ChatStore = {
  getState(): ChatState;
  subscribe(listener: () => void): () => void;
  send(message: string): Promise<void>;
  // Stops the turn that is streaming, before its next step.
  cancel(): Promise<void>;
  decide(approvalId: string, decision: 'approve' | 'deny'): Promise<string | undefined>;
  loadHistory(): Promise<void>;
  loadOlder(): Promise<void>;
};

const HISTORY_PAGE = 50;
// How long the history waits for the live events to connect: what fires after the stream opens
// arrives on it, what fired before is in the history, so nothing falls between the two.
const EVENTS_WAIT_MS = 3_000;

type ScheduleFired = Extract<UserEvent, { type: 'schedule_fired' }>;

let entrySeq = 0;
function nextKey(prefix: string): string {
  entrySeq += 1;
  return `${prefix}-${entrySeq}`;
}

function toEntry(message: HistoryMessage): ChatEntry | undefined {
  if (message.role === 'user') {
    return { kind: 'user', key: message.id, text: message.content, createdAt: message.createdAt };
  }
  if (message.role !== 'assistant') return undefined;
  return {
    kind: 'assistant',
    key: message.id,
    text: message.content,
    createdAt: message.createdAt,
    status: 'done',
    tools: [],
  };
}

// What a tool step made that the chat shows (a screenshot, files), as identities: a step of a
// run whose every such thing is already shown is not shown again.
function shownThingsOf(step: Pick<ToolStep, 'screenshot' | 'files'>): string[] {
  return [
    ...(step.screenshot ? [step.screenshot.id] : []),
    ...(step.files ?? []).map((file) => `${file.size} ${file.url ?? file.path}`),
  ];
}

function toMediaStep(step: RunStep): ToolStep | undefined {
  if (step.kind !== 'tool') return undefined;
  const screenshot = asScreenshot(step.output.screenshot);
  const files = asToolFiles(step.output.files);
  if (!screenshot && !files) return undefined;
  return {
    id: step.id,
    name: step.name,
    summary: summariseArguments(step.input),
    status: step.status === 'ok' ? 'ok' : 'error',
    durationMs: step.durationMs,
    ...(screenshot ? { screenshot } : {}),
    ...(files ? { files } : {}),
  };
}

// The screenshots a run's tools took and the files they wrote, as steps to show, except those
// already shown: an answer that came as JSON (after an approval, or from a server that does not
// stream) brought no tool_finished events to carry them. Best effort: without the run, the reply
// still shows.
async function mediaStepsOf(
  client: ApiClient,
  runId: string,
  shown: Set<string>,
): Promise<ToolStep[]> {
  try {
    const { run } = await client.get<RunsGetResponse>(`/v1/runs/${encodeURIComponent(runId)}`);
    return run.steps
      .map(toMediaStep)
      .filter((step) => step !== undefined)
      .filter((step) => shownThingsOf(step).some((thing) => !shown.has(thing)));
  } catch {
    return [];
  }
}

// The conversation as this browser sees it. It lives outside the chat view, so a reply that
// streams in while the user reads their memory is there when they come back.
export function createChatStore(client: ApiClient, events: UserEventsFeed): ChatStore {
  let state: ChatState = { entries: [], isSending: false, history: 'idle' };
  const listeners = new Set<() => void>();

  function setState(next: Partial<ChatState>): void {
    state = { ...state, ...next };
    for (const listener of listeners) listener();
  }

  function updateAssistant(key: string, change: (entry: AssistantEntry) => AssistantEntry): void {
    setState({
      entries: state.entries.map((entry) =>
        entry.kind === 'assistant' && entry.key === key ? change(entry) : entry,
      ),
    });
  }

  // Adds to a reply the screenshots and files of its run that the chat has not shown yet.
  async function addRunMedia(key: string, runId: string): Promise<void> {
    const shown = new Set(
      state.entries.flatMap((entry) =>
        entry.kind === 'assistant' ? entry.tools.flatMap(shownThingsOf) : [],
      ),
    );
    const steps = await mediaStepsOf(client, runId, shown);
    if (steps.length === 0) return;
    updateAssistant(key, (entry) => ({ ...entry, tools: [...entry.tools, ...steps] }));
  }

  function updateApproval(approvalId: string, change: Partial<ApprovalCard>): void {
    setState({
      entries: state.entries.map((entry) =>
        entry.kind === 'assistant' && entry.approval?.id === approvalId
          ? { ...entry, approval: { ...entry.approval, ...change } }
          : entry,
      ),
    });
  }

  // The chat sends no conversation id, so its messages go to the persistent conversation: that
  // is the history to show. Null until the user's first message.
  let conversationId: string | null | undefined;
  let historyLoad: Promise<void> | undefined;

  async function resolveConversationId(): Promise<string | null> {
    if (typeof conversationId === 'string') return conversationId;
    const list = await client.get<MemoryConversationsListResponse>(
      withQuery('/v1/conversations', { limit: 1 }),
    );
    conversationId = list.defaultConversationId;
    if (conversationId) setState({ conversationId });
    return conversationId;
  }

  async function fetchPage(before?: number): Promise<MemoryMessagesListResponse | undefined> {
    if (conversationId === undefined) await resolveConversationId();
    if (!conversationId) return undefined;
    return client.get<MemoryMessagesListResponse>(
      withQuery(`/v1/conversations/${encodeURIComponent(conversationId)}/messages`, {
        limit: HISTORY_PAGE,
        before,
      }),
    );
  }

  // Pages come newest first; the log reads oldest first.
  function pageEntries(page: MemoryMessagesListResponse): ChatEntry[] {
    const messages = [...page.messages].sort((a, b) => a.seq - b.seq);
    return messages.map(toEntry).filter((entry) => entry !== undefined);
  }

  // A reminder is an assistant message the scheduler stored: shown as it arrives, when it is for
  // this conversation (one made before the user's first message is what created it). Keyed by
  // its message id, as the history keys messages, so it is never shown twice.
  async function showReminder(event: ScheduleFired): Promise<void> {
    const { run, text } = event;
    if (event.schedule.actionType !== 'remind' || run.status !== 'fired' || text === undefined) {
      return;
    }
    // Not loaded yet: the history will hold it when the chat is opened.
    if (!historyLoad) return;
    await historyLoad;
    try {
      if ((await resolveConversationId()) !== event.conversationId) return;
    } catch {
      return;
    }
    const key = run.messageId ?? `schedule-run:${run.id}`;
    if (state.entries.some((entry) => entry.key === key)) return;
    setState({
      entries: [
        ...state.entries,
        {
          kind: 'assistant',
          key,
          text,
          createdAt: run.finishedAt ?? event.occurredAt,
          status: 'done',
          tools: [],
          reminderScheduleId: event.schedule.id,
        },
      ],
    });
  }

  events.subscribe((event) => {
    if (event.type === 'schedule_fired') void showReminder(event);
  });

  async function loadHistory(): Promise<void> {
    await events.whenOpen(EVENTS_WAIT_MS);
    try {
      const page = await fetchPage();
      setState({
        history: 'loaded',
        entries: [...(page ? pageEntries(page) : []), ...state.entries],
        olderCursor: page?.nextBefore,
      });
    } catch (error) {
      // A gateway without the history API answers 404: show this session's messages.
      const isMissing = error instanceof ApiError && error.status === 404;
      setState({ history: isMissing ? 'unavailable' : 'failed' });
    }
  }

  return {
    getState: () => state,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    loadHistory() {
      if (state.history !== 'idle') return historyLoad ?? Promise.resolve();
      setState({ history: 'loading' });
      historyLoad = loadHistory();
      return historyLoad;
    },

    async loadOlder() {
      if (!state.olderCursor) return;
      try {
        const page = await fetchPage(state.olderCursor);
        setState({
          entries: [...(page ? pageEntries(page) : []), ...state.entries],
          olderCursor: page?.nextBefore,
        });
      } catch (error) {
        setState({ notice: error instanceof Error ? error.message : String(error) });
      }
    },

    async send(message) {
      const userEntry: UserEntry = {
        kind: 'user',
        key: nextKey('user'),
        text: message,
        createdAt: new Date().toISOString(),
      };
      const replyKey = nextKey('reply');
      const pending: AssistantEntry = {
        kind: 'assistant',
        key: replyKey,
        text: '',
        createdAt: new Date().toISOString(),
        status: 'streaming',
        tools: [],
      };
      setState({ entries: [...state.entries, userEntry, pending], isSending: true });
      try {
        const outcome = await sendChatMessage(
          client,
          { message, timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone },
          {
            onAccepted: ({ turnId, runId }) =>
              updateAssistant(replyKey, (entry) => ({ ...entry, turnId, runId })),
            onDelta: (text) =>
              updateAssistant(replyKey, (entry) => ({ ...entry, text: entry.text + text })),
            onToolStarted: (event) =>
              updateAssistant(replyKey, (entry) => ({
                ...entry,
                tools: [
                  ...entry.tools,
                  {
                    id: event.toolCallId,
                    name: event.name,
                    summary: summariseArguments(event.arguments ?? {}),
                    status: 'running',
                  },
                ],
              })),
            onToolFinished: (event) =>
              updateAssistant(replyKey, (entry) => ({
                ...entry,
                tools: entry.tools.map((tool) => {
                  if (tool.id !== event.toolCallId) return tool;
                  const screenshot = asScreenshot(event.screenshot);
                  const files = asToolFiles(event.files);
                  return {
                    ...tool,
                    status: event.isError ? 'error' : 'ok',
                    durationMs: event.durationMs,
                    ...(screenshot ? { screenshot } : {}),
                    ...(files ? { files } : {}),
                  };
                }),
              })),
          },
        );
        // The first message of all creates the persistent conversation.
        if (!conversationId) {
          conversationId = outcome.conversationId;
          setState({ conversationId });
        }
        updateAssistant(replyKey, (entry) => ({
          ...entry,
          text: outcome.reply,
          status: 'done',
          runId: outcome.runId,
          usage: outcome.usage,
          ...(outcome.approval ? { approval: { ...outcome.approval, state: 'pending' } } : {}),
        }));
        if (!outcome.isStreamed) void addRunMedia(replyKey, outcome.runId);
      } catch (error) {
        updateAssistant(replyKey, (entry) => ({
          ...entry,
          status: 'failed',
          error: error instanceof Error ? error.message : String(error),
        }));
      } finally {
        setState({ isSending: false });
      }
    },

    async cancel() {
      const running = state.entries.findLast(
        (entry) => entry.kind === 'assistant' && entry.status === 'streaming',
      );
      if (running?.kind !== 'assistant' || !running.turnId) return;
      try {
        await client.send('POST', `/v1/turns/${encodeURIComponent(running.turnId)}/cancel`);
      } catch (error) {
        setState({ notice: error instanceof Error ? error.message : String(error) });
      }
    },

    async decide(approvalId, decision) {
      updateApproval(approvalId, { state: 'deciding' });
      try {
        const response = await client.send<DecisionResponse>(
          'POST',
          `/v1/approvals/${encodeURIComponent(approvalId)}`,
          { decision },
        );
        updateApproval(approvalId, { state: decision === 'approve' ? 'approved' : 'denied' });
        const next = response.approval;
        const replyKey = nextKey('reply');
        setState({
          entries: [
            ...state.entries,
            {
              kind: 'assistant',
              key: replyKey,
              text: response.reply.content,
              createdAt: new Date().toISOString(),
              status: 'done',
              tools: [],
              runId: response.runId,
              usage: response.usage,
              ...(next ? { approval: { ...next, state: 'pending' } } : {}),
            },
          ],
        });
        void addRunMedia(replyKey, response.runId);
        return response.reply.content;
      } catch (error) {
        const message = error instanceof Error ? error.message : String(error);
        const isSettled = error instanceof ApiError && error.status === 409;
        updateApproval(approvalId, { state: isSettled ? 'expired' : 'pending', error: message });
        throw error;
      }
    },
  };
}

export function useChatState(store: ChatStore): ChatState {
  const [current, setCurrent] = useState(store.getState());
  useEffect(() => {
    setCurrent(store.getState());
    return store.subscribe(() => setCurrent(store.getState()));
  }, [store]);
  return current;
}
