import type {
  MemoryFilesReadResponse,
  MemorySkillsListResponse,
  SkillSummary,
} from '@jarvis/contracts';
import { useState } from 'preact/hooks';
import { withQuery } from './api-client';
import { useApp } from './app-context';
import { ErrorNotice, Loading } from './components';
import { formatSkillFile, parseSkillFile, type SkillDraft, skillPath } from './skill-file';
import { useResource } from './use-resource';

const EMPTY: SkillDraft = { name: '', description: '', procedure: '' };

function errorText(failure: unknown): string {
  return failure instanceof Error ? failure.message : String(failure);
}

// A skill's fields. The name is the file's name, so an existing skill keeps it: a new name would
// be a new file beside the old one.
function SkillForm(props: {
  idPrefix: string;
  initial: SkillDraft;
  isNew: boolean;
  onSaved: () => void;
  onCancel?: () => void;
}) {
  const { client } = useApp();
  const { idPrefix } = props;
  const [draft, setDraft] = useState(props.initial);
  const [isSaving, setIsSaving] = useState(false);
  const [error, setError] = useState<string | undefined>();

  async function save(event: Event) {
    event.preventDefault();
    setIsSaving(true);
    setError(undefined);
    try {
      // The memory service checks the name and front matter, and says what is wrong.
      await client.send('PUT', '/v1/memory/files/content', {
        path: skillPath(draft.name),
        content: formatSkillFile(draft),
      });
      if (props.isNew) setDraft(EMPTY);
      props.onSaved();
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setIsSaving(false);
    }
  }

  return (
    <form
      aria-label={props.isNew ? 'New skill' : `Edit skill ${draft.name}`}
      aria-busy={isSaving}
      onSubmit={(event) => void save(event)}
    >
      <div class="form-grid">
        <div class="field">
          <label for={`${idPrefix}-name`}>Name</label>
          <input
            id={`${idPrefix}-name`}
            placeholder="e.g. weekly-review"
            value={draft.name}
            readOnly={!props.isNew}
            onInput={(event) => setDraft({ ...draft, name: event.currentTarget.value })}
            required
          />
        </div>
        <div class="field field-wide">
          <label for={`${idPrefix}-description`}>Description (one line: when to use it)</label>
          <input
            id={`${idPrefix}-description`}
            value={draft.description}
            onInput={(event) => setDraft({ ...draft, description: event.currentTarget.value })}
            required
          />
        </div>
        <div class="field field-wide">
          <label for={`${idPrefix}-procedure`}>Procedure</label>
          <textarea
            id={`${idPrefix}-procedure`}
            rows={8}
            value={draft.procedure}
            onInput={(event) => setDraft({ ...draft, procedure: event.currentTarget.value })}
            required
          />
        </div>
      </div>
      <ErrorNotice message={error} />
      <div class="button-row">
        <button type="submit" class="primary" disabled={isSaving}>
          {props.isNew ? 'Create skill' : 'Save skill'}
        </button>
        {props.onCancel ? (
          <button type="button" onClick={props.onCancel}>
            Cancel
          </button>
        ) : null}
      </div>
    </form>
  );
}

function SkillItem(props: { skill: SkillSummary; onChanged: () => void }) {
  const { client } = useApp();
  const { skill } = props;
  const [draft, setDraft] = useState<SkillDraft | undefined>();
  const [isBusy, setIsBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const query = { path: skillPath(skill.name) };

  async function run(action: () => Promise<void>) {
    setIsBusy(true);
    setError(undefined);
    try {
      await action();
    } catch (failure) {
      setError(errorText(failure));
    } finally {
      setIsBusy(false);
    }
  }

  const edit = () =>
    run(async () => {
      const { file } = await client.get<MemoryFilesReadResponse>(
        withQuery('/v1/memory/files/content', query),
      );
      setDraft({ ...parseSkillFile(file.content), name: skill.name });
    });

  const remove = () => {
    if (!window.confirm(`Delete the skill ${skill.name}? Its earlier versions are kept.`)) return;
    void run(async () => {
      await client.send('DELETE', withQuery('/v1/memory/files/content', query));
      props.onChanged();
    });
  };

  return (
    <li class="card" aria-label={skill.name} aria-busy={isBusy}>
      {draft ? (
        <SkillForm
          idPrefix={`skill-${skill.name}`}
          initial={draft}
          isNew={false}
          onSaved={() => {
            setDraft(undefined);
            props.onChanged();
          }}
          onCancel={() => setDraft(undefined)}
        />
      ) : (
        <>
          <p class="path skill-name">{skill.name}</p>
          <p class="skill-description">{skill.description}</p>
          <div class="button-row">
            <button type="button" disabled={isBusy} onClick={() => void edit()}>
              Edit
            </button>
            <button type="button" class="danger" disabled={isBusy} onClick={remove}>
              Delete
            </button>
          </div>
        </>
      )}
      <ErrorNotice message={error} />
    </li>
  );
}

// Procedures Jarvis loads when a task needs one; the prompt carries only their names and
// descriptions. Each is the memory file skills/<name>.md, so the Files tab shows its versions.
export function SkillsPanel() {
  const { client } = useApp();
  const list = useResource('skills', () =>
    client.get<MemorySkillsListResponse>('/v1/memory/skills'),
  );

  return (
    <div class="panel">
      <details class="card add">
        <summary>New skill</summary>
        <SkillForm idPrefix="new-skill" initial={EMPTY} isNew onSaved={list.reload} />
      </details>
      <ErrorNotice message={list.error} />
      {list.isLoading && !list.data ? <Loading what="skills" /> : null}
      {list.data && list.data.skills.length === 0 ? (
        <p class="empty">
          No skills yet. Write one above, or ask Jarvis to save a procedure as one.
        </p>
      ) : null}
      <ul class="cards" aria-label="Skills">
        {list.data?.skills.map((skill) => (
          <SkillItem key={skill.name} skill={skill} onChanged={list.reload} />
        ))}
      </ul>
    </div>
  );
}
