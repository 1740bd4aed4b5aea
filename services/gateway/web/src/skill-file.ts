// A skill is the memory file skills/<name>.md: front matter with its name and a one-line
// description (what the prompt's skill index shows), then the procedure. The memory service
// checks the file when it is written; this only builds and reads it for the form.

export type SkillDraft = { name: string; description: string; procedure: string };

export function skillPath(name: string): string {
  return `skills/${name.trim()}.md`;
}

// A line break in the description would end the front matter's line and spill into the next key.
function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

export function formatSkillFile(draft: SkillDraft): string {
  return [
    '---',
    `name: ${draft.name.trim()}`,
    `description: ${oneLine(draft.description)}`,
    '---',
    `${draft.procedure.trim()}\n`,
  ].join('\n');
}

const FRONT_MATTER = /^---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/;

// A file written elsewhere (by the agent, or by hand in the Files tab) may lack front matter:
// then all of it is the procedure and the form asks for the rest.
export function parseSkillFile(content: string): SkillDraft {
  const match = FRONT_MATTER.exec(content);
  if (!match) return { name: '', description: '', procedure: content };
  const fields = new Map<string, string>();
  for (const line of (match[1] ?? '').split(/\r?\n/)) {
    const colon = line.indexOf(':');
    if (colon > 0) fields.set(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  return {
    name: fields.get('name') ?? '',
    description: fields.get('description') ?? '',
    procedure: content.slice(match[0].length),
  };
}
