import type { Approval, ApprovalStatus } from '@jarvis/contracts';
import { useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { AppLink, ErrorNotice, JsonBlock, Loading, PageHeader, StatusBadge } from './components';
import { formatDateTime } from './format';
import { useResource } from './use-resource';

const STATUSES: ApprovalStatus[] = ['pending', 'approved', 'denied', 'expired'];

function isApprovalStatus(value: string): value is ApprovalStatus {
  return STATUSES.some((status) => status === value);
}

function ApprovalItem(props: { approval: Approval }) {
  const { chat } = useApp();
  const { approval } = props;
  const [isDeciding, setIsDeciding] = useState(false);
  const [reply, setReply] = useState<string | undefined>();
  const [error, setError] = useState<string | undefined>();

  // Decided through the chat store, so the reply it lets Jarvis write shows in the chat too.
  async function decide(decision: 'approve' | 'deny') {
    setIsDeciding(true);
    setError(undefined);
    try {
      setReply(await chat.decide(approval.id, decision));
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsDeciding(false);
    }
  }

  return (
    <li class="card" aria-busy={isDeciding}>
      <p class="step-head">
        <strong>{approval.toolName}</strong>
        <StatusBadge value={approval.status} />
        <span class="muted">asked {formatDateTime(approval.createdAt)}</span>
      </p>
      <JsonBlock value={approval.arguments} />
      <p class="muted">
        {approval.status === 'pending'
          ? `Expires ${formatDateTime(approval.expiresAt)}`
          : `Decided ${formatDateTime(approval.decidedAt)}`}
        {' · '}
        <AppLink href={`/runs/${approval.runId}`}>Run details</AppLink>
      </p>
      {approval.status === 'pending' && !reply ? (
        <div class="button-row">
          <button
            type="button"
            class="primary"
            disabled={isDeciding}
            onClick={() => void decide('approve')}
          >
            Approve
          </button>
          <button type="button" disabled={isDeciding} onClick={() => void decide('deny')}>
            Deny
          </button>
          {isDeciding ? <span class="muted">Waiting for Jarvis…</span> : null}
        </div>
      ) : null}
      {reply ? <p class="msg-text reply">Jarvis: {reply}</p> : null}
      <ErrorNotice message={error} />
    </li>
  );
}

export function ApprovalsView() {
  const { client } = useApp();
  const [status, setStatus] = useState<ApprovalStatus>('pending');
  const list = useResource(`approvals:${status}`, () =>
    client.get<{ approvals: Approval[] }>(withQuery('/v1/approvals', { status, limit: 100 })),
  );

  return (
    <section class="page">
      <PageHeader title="Approvals">
        <div class="field inline">
          <label for="approvals-status">Show</label>
          <select
            id="approvals-status"
            value={status}
            onChange={(event) => {
              const value = event.currentTarget.value;
              if (isApprovalStatus(value)) setStatus(value);
            }}
          >
            {STATUSES.map((value) => (
              <option key={value} value={value}>
                {value}
              </option>
            ))}
          </select>
        </div>
      </PageHeader>
      <p class="muted">Risky tool calls wait here until you decide.</p>
      <ErrorNotice message={list.error} />
      {list.isLoading && !list.data ? <Loading what="approvals" /> : null}
      {list.data && list.data.approvals.length === 0 ? (
        <p class="empty">Nothing {status}.</p>
      ) : null}
      <ul class="cards" aria-label="Approvals">
        {list.data?.approvals.map((approval) => (
          <ApprovalItem key={approval.id} approval={approval} />
        ))}
      </ul>
    </section>
  );
}
