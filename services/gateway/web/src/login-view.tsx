import { useState } from 'preact/hooks';
import { ApiError, createApiClient } from './api-client';
import { ErrorNotice } from './components';

// Checks the key with a cheap authenticated call before keeping it: a typo is caught here, not
// on the first message.
async function checkKey(key: string): Promise<string | undefined> {
  const client = createApiClient(key, () => {});
  try {
    await client.get('/v1/runs?limit=1');
    return undefined;
  } catch (error) {
    if (error instanceof ApiError && error.status === 401) {
      return 'That key was not accepted. Check it and try again.';
    }
    // Anything else (a service restarting) is no reason to refuse a good key.
    return undefined;
  }
}

export function LoginView(props: { onSignIn: (key: string) => void; reason?: string }) {
  const [key, setKey] = useState('');
  const [error, setError] = useState<string | undefined>(props.reason);
  const [isChecking, setIsChecking] = useState(false);

  async function submit(event: Event) {
    // The form must never submit itself: a GET would put the key in the URL.
    event.preventDefault();
    const trimmed = key.trim();
    if (!trimmed) {
      setError('Enter your API key.');
      return;
    }
    setIsChecking(true);
    const problem = await checkKey(trimmed);
    setIsChecking(false);
    if (problem) setError(problem);
    else props.onSignIn(trimmed);
  }

  return (
    <main class="login" id="main">
      <form class="login-card" method="post" onSubmit={submit}>
        <h1>Jarvis</h1>
        <p class="muted">Sign in with your API key. It is kept in this browser only.</p>
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autocomplete="current-password"
          spellcheck={false}
          value={key}
          onInput={(event) => setKey(event.currentTarget.value)}
          aria-describedby="api-key-help"
          required
        />
        <p id="api-key-help" class="hint">
          An admin creates one with <code>make key NAME=you</code>.
        </p>
        <ErrorNotice message={error} />
        <button type="submit" class="primary" disabled={isChecking}>
          {isChecking ? 'Checking…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}
