import type { Fact, MemoryInstructionsResponse } from '@jarvis/contracts';
import { useEffect, useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading } from './components';
import { useResource } from './use-resource';

type Instructions = MemoryInstructionsResponse['instructions'];

function errorText(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

// The instructions and every standing rule share one token cap, because all of them go into
// every prompt uncut: the server refuses what would pass it, with a message saying so.
function TokenMeter({ instructions }: { instructions: Instructions }) {
  const used = instructions.tokens + instructions.rulesTokens;
  return (
    <p class="token-meter">
      <meter
        min={0}
        max={instructions.cap}
        high={instructions.cap * 0.9}
        value={used}
        aria-label="Tokens of the cap used"
      />
      <output class="muted">
        {used.toLocaleString('en')} of {instructions.cap.toLocaleString('en')} tokens used:{' '}
        {instructions.tokens.toLocaleString('en')} by the instructions,{' '}
        {instructions.rulesTokens.toLocaleString('en')} by standing rules
      </output>
    </p>
  );
}

function StandingRules(props: { onChanged: () => void }) {
  const { client } = useApp();
  const rules = useResource('standing-rules', () =>
    client.get<{ facts: Fact[] }>(withQuery('/v1/memory/facts', { category: 'rule', limit: 200 })),
  );
  const [draft, setDraft] = useState('');
  const [isBusy, setIsBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();

  async function change(action: () => Promise<unknown>) {
    setIsBusy(true);
    setError(undefined);
    try {
      await action();
      rules.reload();
      props.onChanged();
      return true;
    } catch (failure) {
      setError(errorText(failure));
      return false;
    } finally {
      setIsBusy(false);
    }
  }

  async function add(event: Event) {
    event.preventDefault();
    const isAdded = await change(() =>
      client.send('POST', '/v1/memory/facts', { content: draft, category: 'rule' }),
    );
    if (isAdded) setDraft('');
  }

  const remove = (rule: Fact) => {
    if (!window.confirm(`Delete this rule?\n\n${rule.content}`)) return;
    void change(() => client.send('DELETE', `/v1/memory/facts/${encodeURIComponent(rule.id)}`));
  };

  return (
    <div class="rules" aria-busy={isBusy}>
      <h3 id="rules-title">Standing rules</h3>
      <ErrorNotice message={rules.error} />
      {rules.data && rules.data.facts.length === 0 ? (
        <p class="muted">None yet. Add one below, or ask Jarvis to keep one.</p>
      ) : null}
      <ul class="rule-list" aria-labelledby="rules-title">
        {rules.data?.facts.map((rule) => (
          <li key={rule.id}>
            <span>{rule.content}</span>
            <button type="button" class="danger" disabled={isBusy} onClick={() => remove(rule)}>
              Delete
            </button>
          </li>
        ))}
      </ul>
      <form class="toolbar rule-form" aria-label="Add a rule" onSubmit={(event) => void add(event)}>
        <div class="field">
          <label for="new-rule">New rule</label>
          <input
            id="new-rule"
            placeholder="e.g. Always use metric units"
            value={draft}
            onInput={(event) => setDraft(event.currentTarget.value)}
            required
          />
        </div>
        <button type="submit" disabled={isBusy}>
          Add rule
        </button>
      </form>
      <ErrorNotice message={error} />
    </div>
  );
}

// What Jarvis follows in every conversation: the user's own instructions text, and standing
// rules (facts of category `rule`, some proposed by Jarvis and approved by the user).
export function InstructionsSetting() {
  const { client } = useApp();
  const loaded = useResource('instructions', () =>
    client.get<MemoryInstructionsResponse>('/v1/me/instructions'),
  );
  // The answer of the last save: the count as the server made it.
  const [saved, setSaved] = useState<Instructions | undefined>();
  const [text, setText] = useState('');
  const [isSaving, setIsSaving] = useState(false);
  const [isDone, setIsDone] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const instructions = saved ?? loaded.data?.instructions;

  useEffect(() => {
    setSaved(undefined);
    if (loaded.data) setText(loaded.data.instructions.text);
  }, [loaded.data]);

  // A rule added or deleted changes the count, not the text being edited.
  async function recount() {
    try {
      setSaved((await client.get<MemoryInstructionsResponse>('/v1/me/instructions')).instructions);
    } catch (failure) {
      setError(errorText(failure));
    }
  }

  async function save(event: Event) {
    event.preventDefault();
    setIsSaving(true);
    setError(undefined);
    setIsDone(false);
    try {
      const answer = await client.send<MemoryInstructionsResponse>('PUT', '/v1/me/instructions', {
        text,
      });
      setSaved(answer.instructions);
      setIsDone(true);
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setIsSaving(false);
    }
  }

  return (
    <section class="card settings" aria-labelledby="instructions-title" aria-busy={isSaving}>
      <h2 id="instructions-title">Instructions</h2>
      <p class="muted">
        Jarvis follows these in every conversation and mission: how to answer, what to avoid.
      </p>
      <ErrorNotice message={loaded.error} />
      {instructions ? <TokenMeter instructions={instructions} /> : null}
      {loaded.data ? (
        <form aria-label="Instructions" onSubmit={(event) => void save(event)}>
          <div class="field">
            <label for="instructions-text">Your instructions</label>
            <textarea
              id="instructions-text"
              rows={6}
              maxLength={8_000}
              placeholder="e.g. Answer briefly. I live in Oslo; use metric units."
              value={text}
              onInput={(event) => {
                setText(event.currentTarget.value);
                setIsDone(false);
              }}
            />
          </div>
          <div class="button-row">
            <button type="submit" class="primary" disabled={isSaving}>
              Save instructions
            </button>
            {isDone ? <output class="muted">Saved.</output> : null}
          </div>
          <ErrorNotice message={error} />
        </form>
      ) : loaded.error ? null : (
        <Loading what="your instructions" />
      )}
      <StandingRules onChanged={() => void recount()} />
    </section>
  );
}
