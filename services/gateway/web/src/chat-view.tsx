import { useEffect, useLayoutEffect, useRef, useState } from 'preact/hooks';
import { useApp } from './app-context';
import type { ApprovalCard, AssistantEntry, ChatEntry } from './chat-store';
import { useChatState } from './chat-store';
import { AppLink, ErrorNotice, StatusBadge } from './components';
import { ConversationSearch } from './conversation-search';
import { formatDuration, formatTokens, summariseArguments } from './format';
import { MarkdownReply } from './markdown-reply';
import { Screenshot } from './screenshot';
import { ToolFiles } from './workspace-file';
import { WorkspacePanel } from './workspace-panel';

function ToolSteps({ entry }: { entry: AssistantEntry }) {
  if (entry.tools.length === 0) return null;
  return (
    <>
      <ToolStepList entry={entry} />
      {entry.tools.map((tool) =>
        tool.screenshot ? (
          <Screenshot key={tool.id} shot={tool.screenshot} label={`Screenshot by ${tool.name}`} />
        ) : null,
      )}
      {entry.tools.map((tool) =>
        tool.files ? (
          <ToolFiles key={`files-${tool.id}`} files={tool.files} toolName={tool.name} />
        ) : null,
      )}
    </>
  );
}

function ToolStepList({ entry }: { entry: AssistantEntry }) {
  return (
    <ol class="tool-steps" aria-label="Tool steps">
      {entry.tools.map((tool) => (
        <li key={tool.id} class={`tool-step tool-${tool.status}`}>
          <span class="tool-name">{tool.name}</span>
          <span class="tool-args">{tool.summary}</span>
          <span class="tool-outcome">
            <StatusBadge
              value={tool.status}
              label={tool.status === 'error' ? 'error' : tool.status === 'ok' ? 'ok' : 'running'}
            />
            {tool.durationMs !== undefined ? (
              <span class="muted">{formatDuration(tool.durationMs)}</span>
            ) : null}
          </span>
        </li>
      ))}
    </ol>
  );
}

function ApprovalPrompt({ approval }: { approval: ApprovalCard }) {
  const { chat } = useApp();
  const isOpen = approval.state === 'pending' || approval.state === 'deciding';
  const decide = (decision: 'approve' | 'deny') => {
    chat.decide(approval.id, decision).catch(() => {
      // The card shows the error itself.
    });
  };
  return (
    <fieldset class="approval">
      <legend>
        Jarvis wants to run <strong>{approval.toolName}</strong>
      </legend>
      <p class="tool-args">{summariseArguments(approval.arguments)}</p>
      {isOpen ? (
        <div class="button-row">
          <button
            type="button"
            class="primary"
            disabled={approval.state === 'deciding'}
            onClick={() => decide('approve')}
          >
            Approve
          </button>
          <button
            type="button"
            disabled={approval.state === 'deciding'}
            onClick={() => decide('deny')}
          >
            Deny
          </button>
          {approval.state === 'deciding' ? <span class="muted">Waiting for Jarvis…</span> : null}
        </div>
      ) : (
        <StatusBadge value={approval.state} />
      )}
      <ErrorNotice message={approval.error} />
    </fieldset>
  );
}

function Message({ entry }: { entry: ChatEntry }) {
  if (entry.kind === 'user') {
    return (
      <article class="msg msg-user" aria-label="You said">
        <p class="msg-text">{entry.text}</p>
      </article>
    );
  }
  const isStreaming = entry.status === 'streaming';
  return (
    <article class="msg msg-assistant" aria-label="Jarvis said" aria-busy={isStreaming}>
      <ToolSteps entry={entry} />
      {entry.text ? (
        <MarkdownReply text={entry.text} />
      ) : isStreaming ? (
        <p class="typing">Jarvis is thinking…</p>
      ) : null}
      <ErrorNotice message={entry.error} />
      {entry.approval ? <ApprovalPrompt approval={entry.approval} /> : null}
      {entry.runId || entry.usage || entry.reminderScheduleId ? (
        <p class="msg-meta">
          {entry.reminderScheduleId ? (
            <AppLink href={`/schedules/${entry.reminderScheduleId}`}>Reminder</AppLink>
          ) : null}
          {entry.usage ? <span>{formatTokens(entry.usage)}</span> : null}
          {entry.runId ? <AppLink href={`/runs/${entry.runId}`}>Run details</AppLink> : null}
        </p>
      ) : null}
    </article>
  );
}

export function ChatView() {
  const { chat } = useApp();
  const state = useChatState(chat);
  const [draft, setDraft] = useState('');
  const log = useRef<HTMLDivElement>(null);
  const isAtBottom = useRef(true);

  useEffect(() => {
    void chat.loadHistory();
  }, [chat]);

  // Follow the conversation as it grows, unless the user scrolled up to read.
  useLayoutEffect(() => {
    const element = log.current;
    if (element && isAtBottom.current) element.scrollTop = element.scrollHeight;
  }, [state.entries]);

  // Grows as the chat's tools write files: the open files panel reads the workspace again.
  const filesWritten = state.entries.reduce(
    (count, entry) =>
      entry.kind === 'assistant'
        ? entry.tools.reduce((sum, tool) => sum + (tool.files?.length ?? 0), count)
        : count,
    0,
  );

  const last = state.entries.at(-1);
  const canStop = last?.kind === 'assistant' && last.status === 'streaming' && !!last.turnId;

  // Sending waits for the history, which would otherwise show the new message a second time.
  const canSend = !state.isSending && state.history !== 'loading';

  function send() {
    const message = draft.trim();
    if (!message || !canSend) return;
    setDraft('');
    isAtBottom.current = true;
    void chat.send(message);
  }

  return (
    <section class="chat" aria-labelledby="chat-title">
      <h1 id="chat-title" class="visually-hidden">
        Chat
      </h1>
      <ConversationSearch />
      {state.conversationId ? (
        <WorkspacePanel
          kind="conversation"
          id={state.conversationId}
          title="Files"
          version={filesWritten}
        />
      ) : null}
      <div
        class="chat-log"
        role="log"
        ref={log}
        aria-label="Conversation"
        onScroll={(event) => {
          const element = event.currentTarget;
          isAtBottom.current = element.scrollHeight - element.scrollTop - element.clientHeight < 40;
        }}
      >
        {state.olderCursor ? (
          <button type="button" class="link-button" onClick={() => void chat.loadOlder()}>
            Load earlier messages
          </button>
        ) : null}
        {state.history === 'loading' ? <p class="muted">Loading history…</p> : null}
        {state.history === 'failed' ? (
          <p class="muted">Earlier messages could not be loaded.</p>
        ) : null}
        {state.entries.length === 0 && state.history !== 'loading' ? (
          <div class="empty">
            <p>Say hello. Jarvis keeps one conversation with you, and remembers it.</p>
            {state.history === 'unavailable' ? (
              <p class="muted">Messages from earlier sessions are not shown here yet.</p>
            ) : null}
          </div>
        ) : null}
        {state.entries.map((entry) => (
          <Message key={entry.key} entry={entry} />
        ))}
        <ErrorNotice message={state.notice} />
      </div>
      <form
        class="composer"
        onSubmit={(event) => {
          event.preventDefault();
          send();
        }}
      >
        <label for="message" class="visually-hidden">
          Message
        </label>
        <textarea
          id="message"
          rows={2}
          placeholder="Message Jarvis"
          value={draft}
          onInput={(event) => setDraft(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === 'Enter' && !event.shiftKey && !event.isComposing) {
              event.preventDefault();
              send();
            }
          }}
        />
        {canStop ? (
          <button type="button" onClick={() => void chat.cancel()}>
            Stop
          </button>
        ) : (
          <button type="submit" class="primary" disabled={!canSend || !draft.trim()}>
            {state.isSending ? 'Sending…' : 'Send'}
          </button>
        )}
      </form>
    </section>
  );
}
