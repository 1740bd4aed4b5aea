import type {
  Approval,
  ApprovalRequest,
  ChatResponse,
  HistoryMessage,
  MemoryConversationsListResponse,
  MemoryMessagesListResponse,
  Usage,
} from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { type ApiClient, ApiError, withQuery } from './api-client';
import { sendChatMessage } from './chat-stream';
import { summariseArguments } from './format';

type ToolStep = {
  id: string;
  name: string;
  summary: string;
  status: 'running' | 'ok' | 'error';
  durationMs?: number;
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

// The conversation as this browser sees it. It lives outside the chat view, so a reply that
// streams in while the user reads their memory is there when they come back.
export function createChatStore(client: ApiClient): ChatStore {
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

  async function fetchPage(before?: number): Promise<MemoryMessagesListResponse | undefined> {
    if (conversationId === undefined) {
      const list = await client.get<MemoryConversationsListResponse>(
        withQuery('/v1/conversations', { limit: 1 }),
      );
      conversationId = list.defaultConversationId;
    }
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

  return {
    getState: () => state,
    subscribe(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },

    async loadHistory() {
      if (state.history !== 'idle') return;
      setState({ history: 'loading' });
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
                tools: entry.tools.map((tool) =>
                  tool.id === event.toolCallId
                    ? {
                        ...tool,
                        status: event.isError ? 'error' : 'ok',
                        durationMs: event.durationMs,
                      }
                    : tool,
                ),
              })),
          },
        );
        updateAssistant(replyKey, (entry) => ({
          ...entry,
          text: outcome.reply,
          status: 'done',
          runId: outcome.runId,
          usage: outcome.usage,
          ...(outcome.approval ? { approval: { ...outcome.approval, state: 'pending' } } : {}),
        }));
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
        setState({
          entries: [
            ...state.entries,
            {
              kind: 'assistant',
              key: nextKey('reply'),
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
