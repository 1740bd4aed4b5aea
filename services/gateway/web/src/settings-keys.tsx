import type { ApiKeyInfo, CreateApiKeyResponse, ListApiKeysResponse } from '@jarvis/contracts';
import { useState } from 'preact/hooks';
import { useApp } from './app-context';
import { ErrorNotice, Loading } from './components';
import { formatDateTime } from './format';
import { loadApiKey } from './key-store';
import { useResource } from './use-resource';

// The user's API keys: one per app or script that talks to Jarvis, so each can be revoked alone.
// The server keeps only a hash; a new key is shown here once, and never again.
function NewKey(props: { created: CreateApiKeyResponse; onDismiss: () => void }) {
  return (
    <div class="new-key">
      <p>
        <output>
          <strong>Copy this key now:</strong> it is not shown again.
        </output>
      </p>
      <code class="code-value new-key-value">{props.created.apiKey}</code>
      <div class="button-row">
        <button type="button" onClick={props.onDismiss}>
          Done
        </button>
      </div>
    </div>
  );
}

function KeyRow(props: { apiKey: ApiKeyInfo; isThisBrowser: boolean; onRevoked: () => void }) {
  const { client } = useApp();
  const { apiKey } = props;
  const [isRevoking, setIsRevoking] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const name = apiKey.name ?? 'Unnamed key';

  async function revoke() {
    const warning = props.isThisBrowser
      ? ' This browser signs in with it: you will be signed out.'
      : '';
    if (
      !window.confirm(
        `Revoke "${name}" (${apiKey.prefix}…)? Whatever uses it stops working.${warning}`,
      )
    ) {
      return;
    }
    setIsRevoking(true);
    setError(undefined);
    try {
      await client.send('DELETE', `/v1/keys/${encodeURIComponent(apiKey.id)}`);
      props.onRevoked();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
      setIsRevoking(false);
    }
  }

  return (
    <li class="card key-row" aria-label={name}>
      <div class="key-head">
        <span class="row-title">{name}</span>
        <code>{apiKey.prefix}…</code>
        {props.isThisBrowser ? <span class="badge badge-active">this browser</span> : null}
        {apiKey.scope === 'admin' ? <span class="badge badge-warn">admin</span> : null}
      </div>
      <p class="muted">
        Created {formatDateTime(apiKey.createdAt)} · last used {formatDateTime(apiKey.lastUsedAt)}
      </p>
      {/* The admin key is rotated through JARVIS_ADMIN_KEY: the API refuses to revoke it. */}
      {apiKey.scope === 'admin' ? null : (
        <div class="button-row">
          <button type="button" disabled={isRevoking} onClick={() => void revoke()}>
            Revoke
          </button>
        </div>
      )}
      <ErrorNotice message={error} />
    </li>
  );
}

export function ApiKeysSetting() {
  const { client } = useApp();
  const keys = useResource('api-keys', () => client.get<ListApiKeysResponse>('/v1/keys'));
  const [name, setName] = useState('');
  const [created, setCreated] = useState<CreateApiKeyResponse | undefined>();
  const [isCreating, setIsCreating] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const signedInWith = loadApiKey();
  const active = keys.data?.keys.filter((key) => key.revokedAt === null) ?? [];
  const revokedCount = (keys.data?.keys.length ?? 0) - active.length;

  async function create(event: Event) {
    event.preventDefault();
    setIsCreating(true);
    setError(undefined);
    try {
      const answer = await client.send<CreateApiKeyResponse>(
        'POST',
        '/v1/keys',
        name.trim() ? { name: name.trim() } : {},
      );
      setCreated(answer);
      setName('');
      keys.reload();
    } catch (failure) {
      setError(failure instanceof Error ? failure.message : String(failure));
    } finally {
      setIsCreating(false);
    }
  }

  return (
    <section class="card settings" aria-labelledby="api-keys-title" aria-busy={isCreating}>
      <h2 id="api-keys-title">API keys</h2>
      <p class="muted">
        One key per app or script that talks to Jarvis for you, so that each can be revoked alone.
      </p>
      {created ? <NewKey created={created} onDismiss={() => setCreated(undefined)} /> : null}
      <form
        class="toolbar key-form"
        aria-label="New API key"
        onSubmit={(event) => void create(event)}
      >
        <div class="field">
          <label for="new-key-name">Name (optional)</label>
          <input
            id="new-key-name"
            value={name}
            maxLength={100}
            placeholder="e.g. phone shortcut"
            onInput={(event) => setName(event.currentTarget.value)}
          />
        </div>
        <button type="submit" disabled={isCreating}>
          Create key
        </button>
      </form>
      <ErrorNotice message={error ?? keys.error} />
      {keys.data ? (
        <ul class="cards" aria-label="Your API keys">
          {active.map((key) => (
            <KeyRow
              key={key.id}
              apiKey={key}
              isThisBrowser={signedInWith?.startsWith(key.prefix) ?? false}
              onRevoked={keys.reload}
            />
          ))}
        </ul>
      ) : keys.error ? null : (
        <Loading what="your keys" />
      )}
      {revokedCount > 0 ? (
        <p class="muted">
          {revokedCount === 1 ? '1 revoked key' : `${revokedCount} revoked keys`} not shown.
        </p>
      ) : null}
    </section>
  );
}
