import type {
  HistoryMessage,
  MemoryMessagesListResponse,
  MemorySearchResponse,
} from '@jarvis/contracts';
import { useLayoutEffect, useRef, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice } from './components';
import { formatDateTime } from './format';
import { MarkdownReply } from './markdown-reply';
import { snippetOf } from './search-snippet';

type SearchResult = MemorySearchResponse['results'][number];

const RESULTS_LIMIT = 20;
// Messages shown around a found one at first; "Load earlier messages" pages back from there.
const CONTEXT_PAGE = 30;

type MessageContext = {
  conversationId: string;
  messageId: string;
  // Oldest first, as the chat reads.
  messages: HistoryMessage[];
  olderCursor?: number;
  isLoadingOlder: boolean;
  error?: string;
};

function errorText(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

// Pages come newest first; the conversation reads oldest first. Only what the chat shows is kept.
function readingOrder(page: MemoryMessagesListResponse): HistoryMessage[] {
  return page.messages
    .filter((message) => message.role === 'user' || message.role === 'assistant')
    .sort((a, b) => a.seq - b.seq);
}

function Hit({ result, query, onOpen }: { result: SearchResult; query: string; onOpen(): void }) {
  const { before, match, after } = snippetOf(result.text, query);
  return (
    <li>
      <button type="button" class="conversation-hit" onClick={onOpen}>
        <span class="conversation-hit-text">
          {before}
          {match ? <mark>{match}</mark> : null}
          {after}
        </span>
        <span class="muted">{formatDateTime(result.createdAt)}</span>
      </button>
    </li>
  );
}

// The found message among the conversation's messages around it, in a modal dialog over the
// chat: the chat underneath keeps its place, its live replies and its scroll position.
function ContextDialog(props: { context: MessageContext; onLoadOlder(): void; onClose(): void }) {
  const { context, onLoadOlder, onClose } = props;
  const dialog = useRef<HTMLDialogElement>(null);
  const log = useRef<HTMLDivElement>(null);
  const found = useRef<HTMLElement>(null);
  // Kept across renders: an older page must not move what the user is reading.
  const heightBefore = useRef<number | undefined>(undefined);

  // Once, as it opens (a closed dialog lays nothing out to scroll to): the found message in the
  // middle of the view, and focused rather than the Close button, so a screen reader starts there.
  useLayoutEffect(() => {
    const element = dialog.current;
    if (element && !element.open) element.showModal();
    found.current?.scrollIntoView({ block: 'center' });
    found.current?.focus({ preventScroll: true });
  }, []);

  useLayoutEffect(() => {
    const element = log.current;
    if (!element || heightBefore.current === undefined) return;
    element.scrollTop += element.scrollHeight - heightBefore.current;
    heightBefore.current = undefined;
  }, [context.messages]);

  return (
    <dialog
      ref={dialog}
      class="message-context"
      aria-labelledby="message-context-title"
      onClose={onClose}
    >
      <header class="message-context-header">
        <h2 id="message-context-title">In the conversation</h2>
        <button type="button" onClick={() => dialog.current?.close()}>
          Close
        </button>
      </header>
      <div class="chat-log message-context-log" ref={log}>
        {context.olderCursor ? (
          <button
            type="button"
            class="link-button"
            disabled={context.isLoadingOlder}
            onClick={() => {
              heightBefore.current = log.current?.scrollHeight;
              onLoadOlder();
            }}
          >
            Load earlier messages
          </button>
        ) : null}
        {context.messages.map((message) => {
          const isFound = message.id === context.messageId;
          const who = message.role === 'user' ? 'You said' : 'Jarvis said';
          return (
            <article
              key={message.id}
              ref={isFound ? found : undefined}
              class={`msg msg-${message.role}${isFound ? ' msg-found' : ''}`}
              aria-label={isFound ? `${who} (found)` : who}
              aria-current={isFound ? 'true' : undefined}
              tabIndex={isFound ? -1 : undefined}
            >
              {message.role === 'assistant' ? (
                <MarkdownReply text={message.content} />
              ) : (
                <p class="msg-text">{message.content}</p>
              )}
              <p class="msg-meta">{formatDateTime(message.createdAt)}</p>
            </article>
          );
        })}
        <ErrorNotice message={context.error} />
      </div>
    </dialog>
  );
}

// A search box over the user's messages (memory search, messages only). Choosing a hit opens the
// page of its conversation that holds it (the messages API's `around`), scrolled to it and
// highlighted: the chat itself loads only its latest pages, and a long-past message may be
// thousands of messages back.
export function ConversationSearch() {
  const { client } = useApp();
  const [query, setQuery] = useState('');
  // The query the results answer: the box may have been edited since.
  const [askedQuery, setAskedQuery] = useState('');
  const [results, setResults] = useState<SearchResult[] | undefined>();
  const [isSearching, setIsSearching] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [context, setContext] = useState<MessageContext | undefined>();

  async function search(event: Event) {
    event.preventDefault();
    const asked = query.trim();
    if (!asked) return;
    setIsSearching(true);
    setError(undefined);
    try {
      const answer = await client.send<MemorySearchResponse>('POST', '/v1/memory/search', {
        query: asked,
        kinds: ['message'],
        limit: RESULTS_LIMIT,
      });
      setAskedQuery(asked);
      setResults(answer.results);
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setIsSearching(false);
    }
  }

  async function open(result: SearchResult) {
    const { conversationId } = result;
    if (!conversationId) return;
    setError(undefined);
    try {
      const page = await client.get<MemoryMessagesListResponse>(
        withQuery(`/v1/conversations/${encodeURIComponent(conversationId)}/messages`, {
          around: result.id,
          limit: CONTEXT_PAGE,
        }),
      );
      setContext({
        conversationId,
        messageId: result.id,
        messages: readingOrder(page),
        olderCursor: page.nextBefore,
        isLoadingOlder: false,
      });
    } catch (failure) {
      // Forgotten since the search, most likely: the API answers not_found.
      setError(errorText(failure));
    }
  }

  async function loadOlder() {
    if (!context?.olderCursor) return;
    const shown = context;
    setContext({ ...shown, isLoadingOlder: true, error: undefined });
    try {
      const page = await client.get<MemoryMessagesListResponse>(
        withQuery(`/v1/conversations/${encodeURIComponent(shown.conversationId)}/messages`, {
          before: shown.olderCursor,
          limit: CONTEXT_PAGE,
        }),
      );
      setContext({
        ...shown,
        messages: [...readingOrder(page), ...shown.messages],
        olderCursor: page.nextBefore,
        isLoadingOlder: false,
      });
    } catch (failure) {
      setContext({ ...shown, isLoadingOlder: false, error: errorText(failure) });
    }
  }

  function clear() {
    setResults(undefined);
    setQuery('');
    setError(undefined);
  }

  return (
    <search class="conversation-search" aria-label="Conversation search">
      <form class="conversation-search-form" onSubmit={search}>
        <label for="conversation-query" class="visually-hidden">
          Search the conversation
        </label>
        <input
          id="conversation-query"
          type="search"
          placeholder="Search your messages"
          value={query}
          onInput={(event) => setQuery(event.currentTarget.value)}
          onKeyDown={(event) => {
            if (event.key === 'Escape' && results) clear();
          }}
        />
        <button type="submit" disabled={isSearching || !query.trim()}>
          {isSearching ? 'Searching…' : 'Search'}
        </button>
        {results ? (
          <button type="button" class="link-button" onClick={clear}>
            Clear
          </button>
        ) : null}
      </form>
      <ErrorNotice message={error} />
      {results?.length === 0 ? <p class="muted conversation-search-empty">Nothing found.</p> : null}
      {results && results.length > 0 ? (
        <ol class="conversation-search-results" aria-label="Messages found">
          {results.map((result) => (
            <Hit
              key={result.id}
              result={result}
              query={askedQuery}
              onOpen={() => void open(result)}
            />
          ))}
        </ol>
      ) : null}
      {context ? (
        <ContextDialog
          key={context.messageId}
          context={context}
          onLoadOlder={() => void loadOlder()}
          onClose={() => setContext(undefined)}
        />
      ) : null}
    </search>
  );
}
