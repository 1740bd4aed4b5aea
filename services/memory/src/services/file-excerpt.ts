// What a recalled memory file shows in the prompt: a short excerpt, not the file. An episode
// written by the utility model (front matter with a title, then sections) shows its title and
// outcome; any other file its first lines.

export const FILE_EXCERPT_MAX_CHARS = 600;

const FRONT_MATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;
const TITLE_LINE = /^title[ \t]*:(.*)$/m;
const OUTCOME_SECTION = /^##[ \t]+Outcome[ \t]*\r?\n([\s\S]*?)(?=^##[ \t]|(?![\s\S]))/m;

// Episodes write the title as a JSON string; a hand-written file may not quote it.
function readTitle(value: string): string {
  const trimmed = value.trim();
  try {
    const parsed: unknown = JSON.parse(trimmed);
    if (typeof parsed === 'string') return parsed.trim();
  } catch {
    // Not JSON: the line is the title as written.
  }
  return trimmed;
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const lastSpace = cut.lastIndexOf(' ');
  return `${lastSpace > max / 2 ? cut.slice(0, lastSpace) : cut}…`;
}

export function fileExcerpt(content: string): string {
  const frontMatter = FRONT_MATTER.exec(content);
  const rest = frontMatter ? content.slice(frontMatter[0].length) : content;
  const titleLine = frontMatter?.[1] ? TITLE_LINE.exec(frontMatter[1]) : null;
  const title = titleLine?.[1] ? readTitle(titleLine[1]) : '';
  if (!title) return clip(rest, FILE_EXCERPT_MAX_CHARS);
  const outcome = OUTCOME_SECTION.exec(rest)?.[1]?.trim();
  return clip(outcome ? `${title}. Outcome: ${outcome}` : title, FILE_EXCERPT_MAX_CHARS);
}
