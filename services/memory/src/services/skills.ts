import { BusError } from '@jarvis/bus';
import {
  isSkillName,
  type MemorySkillsLoadResponse,
  SKILL_DESCRIPTION_MAX_CHARS,
  SKILL_NAME_RULE,
  SKILLS_FOLDER,
  SKILLS_MAX,
  type SkillSummary,
  skillPath,
} from '@jarvis/contracts';
import type { Queryable } from '@jarvis/db';
import {
  countOtherLiveFiles,
  findLiveFile,
  listLiveFileHeads,
} from '../repositories/files-repository';

// A skill is the memory file skills/<name>.md: the lines `---`, `name: <name>`,
// `description: <one line>` and `---`, then the procedure. Only these two keys, one value a
// line: a YAML parser would accept lists, anchors and multi-line strings, none of which the
// prompt's one-line index could show.

type Skill = SkillSummary & { body: string };

type SkillReading = { skill: Skill; problem?: never } | { skill?: never; problem: string };

// The front matter ends within this many characters, so the index reads only the start of each
// file, never whole procedures, on every turn.
const FRONT_MATTER_MAX_CHARS = 1_000;

// The first `---` line after the opening one closes it.
const FRONT_MATTER = /^---[ \t]*\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/;
const FIELD = /^([A-Za-z][\w-]*)[ \t]*:(.*)$/;
const KEYS = new Set(['name', 'description']);

const SKILL_FORMAT = `A skill is the file skills/<name>.md, <name> being ${SKILL_NAME_RULE}. It starts with the lines "---", "name: <name>", "description: <what it is for, one line of at most ${SKILL_DESCRIPTION_MAX_CHARS} characters>" and "---", and the procedure follows.`;

// YAML users quote values; the quotes are not part of the name or description.
function unquote(value: string): string {
  const trimmed = value.trim();
  const quote = trimmed[0];
  const isQuoted =
    trimmed.length >= 2 && (quote === '"' || quote === "'") && trimmed.endsWith(quote);
  return isQuoted ? trimmed.slice(1, -1).trim() : trimmed;
}

function readFields(block: string): Map<string, string> | string {
  const fields = new Map<string, string>();
  for (const line of block.split(/\r?\n/)) {
    if (line.trim() === '') continue;
    const field = FIELD.exec(line);
    if (!field) return `"${line.trim()}" is not a "key: value" line`;
    const key = field[1] ?? '';
    if (!KEYS.has(key)) return `unknown key "${key}": the front matter holds name and description`;
    if (fields.has(key)) return `${key} is given twice`;
    fields.set(key, unquote(field[2] ?? ''));
  }
  return fields;
}

function readSummary(fields: Map<string, string>): SkillSummary | string {
  const name = fields.get('name');
  const description = fields.get('description');
  if (name === undefined) return 'the front matter has no name';
  if (!isSkillName(name)) return `name "${name}" must be ${SKILL_NAME_RULE}`;
  if (!description) return 'the front matter has no description';
  if (description.length > SKILL_DESCRIPTION_MAX_CHARS) {
    return `the description must be at most ${SKILL_DESCRIPTION_MAX_CHARS} characters`;
  }
  return { name, description };
}

// The skill in a file's content (or its first FRONT_MATTER_MAX_CHARS characters, for the
// index: `body` is then cut), or what keeps it from being one.
export function parseSkill(content: string): SkillReading {
  const match = FRONT_MATTER.exec(content);
  if (!match) {
    return { problem: 'it must start with front matter between two "---" lines' };
  }
  if (match[0].length > FRONT_MATTER_MAX_CHARS) {
    return { problem: `the front matter must end within ${FRONT_MATTER_MAX_CHARS} characters` };
  }
  const fields = readFields(match[1] ?? '');
  if (typeof fields === 'string') return { problem: fields };
  const summary = readSummary(fields);
  if (typeof summary === 'string') return { problem: summary };
  return { skill: { ...summary, body: content.slice(match[0].length) } };
}

// The name a path under skills/ gives its skill, undefined when it cannot hold one.
function nameOfPath(path: string): string | undefined {
  const fileName = path.slice(SKILLS_FOLDER.length);
  if (!fileName.endsWith('.md')) return undefined;
  const name = fileName.slice(0, -'.md'.length);
  return isSkillName(name) ? name : undefined;
}

function readSkillFile(path: string, content: string): SkillReading {
  const reading = parseSkill(content);
  if (reading.problem !== undefined) return reading;
  const fileName = nameOfPath(path);
  if (reading.skill.name !== fileName) {
    return { problem: `name "${reading.skill.name}" must be the file's name, "${fileName}"` };
  }
  return reading;
}

function badSkill(field: 'path' | 'content', path: string, problem: string): BusError {
  return new BusError(
    'bad_request',
    `${field}: ${path} is not a skill: ${problem}. ${SKILL_FORMAT}`,
  );
}

// Only skills live under skills/, so that the index never meets a file it cannot show.
export function refuseInvalidSkill(path: string, content: string): void {
  if (!path.startsWith(SKILLS_FOLDER)) return;
  if (nameOfPath(path) === undefined) {
    throw badSkill('path', path, 'its name is not <name>.md');
  }
  const reading = readSkillFile(path, content);
  if (reading.problem !== undefined) throw badSkill('content', path, reading.problem);
  if (reading.skill.body.trim() === '') {
    throw badSkill('content', path, 'the procedure after the front matter is empty');
  }
}

// Every prompt names all of a user's skills, so a new one past SKILLS_MAX is refused rather
// than left out of the index unseen.
export async function refuseSkillPastLimit(
  db: Queryable,
  userId: string,
  path: string,
): Promise<void> {
  if (!path.startsWith(SKILLS_FOLDER)) return;
  const others = await countOtherLiveFiles(db, userId, SKILLS_FOLDER, path);
  if (others >= SKILLS_MAX) {
    throw new BusError(
      'conflict',
      `you have ${SKILLS_MAX} skills, the most there can be: delete one before adding ${path}`,
    );
  }
}

// The user's skills by name. A file that is not a skill (written before skills were checked,
// or imported) is left out, as loadSkill refuses it.
export async function listSkills(db: Queryable, userId: string): Promise<SkillSummary[]> {
  const heads = await listLiveFileHeads(
    db,
    userId,
    SKILLS_FOLDER,
    FRONT_MATTER_MAX_CHARS,
    SKILLS_MAX,
  );
  return heads.flatMap(({ path, head }) => {
    const { skill } = readSkillFile(path, head);
    return skill ? [{ name: skill.name, description: skill.description }] : [];
  });
}

export async function loadSkill(
  db: Queryable,
  request: { userId: string; name: string },
): Promise<MemorySkillsLoadResponse> {
  const path = skillPath(request.name);
  const file = await findLiveFile(db, request.userId, path);
  const skill = file && readSkillFile(path, file.content).skill;
  if (!skill) throw new BusError('not_found', `no skill named "${request.name}"`);
  return skill;
}
