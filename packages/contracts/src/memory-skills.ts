import { z } from 'zod';
import { Id } from './common';
import { defineRpc } from './define';
import { SkillSummary } from './memory-recall';

// Skills: procedures the agent loads when it needs one. A skill is the memory file
// `skills/<name>.md`: front matter naming it and saying in one line what it is for, then the
// procedure. Users write them through memory.files (and /v1/memory/files); the memory service
// refuses a skills/ write that is not one.

export const SKILLS_FOLDER = 'skills/';
const SKILL_NAME_MAX_CHARS = 64;
// Every skill's name and description are in every prompt, so both are bounded: a description
// is a line, and a user has at most SKILLS_MAX skills.
export const SKILL_DESCRIPTION_MAX_CHARS = 200;
export const SKILLS_MAX = 50;

// Lowercase so that one name never means two files on a case-insensitive export.
const SKILL_NAME_PATTERN = new RegExp(`^[a-z0-9][a-z0-9-]{0,${SKILL_NAME_MAX_CHARS - 1}}$`);
export const SKILL_NAME_RULE = `1-${SKILL_NAME_MAX_CHARS} lowercase letters, digits or hyphens, starting with a letter or digit`;

export function isSkillName(name: string): boolean {
  return SKILL_NAME_PATTERN.test(name);
}

export const SkillName = z.string().refine(isSkillName, `must be ${SKILL_NAME_RULE}`);

export function skillPath(name: string): string {
  return `${SKILLS_FOLDER}${name}.md`;
}

// memory.skills.list: the user's skills by name, as the prompt's index shows them.
export const MemorySkillsListRequest = z.object({ userId: Id });
export type MemorySkillsListRequest = z.input<typeof MemorySkillsListRequest>;
export const MemorySkillsListResponse = z.object({ skills: z.array(SkillSummary) });
export type MemorySkillsListResponse = z.infer<typeof MemorySkillsListResponse>;
export const memorySkillsList = defineRpc(
  'memory.skills.list',
  MemorySkillsListRequest,
  MemorySkillsListResponse,
);

// memory.skills.load: one skill with its procedure (`body`); not_found when the user has none
// of that name.
export const MemorySkillsLoadRequest = z.object({ userId: Id, name: SkillName });
export type MemorySkillsLoadRequest = z.input<typeof MemorySkillsLoadRequest>;
export const MemorySkillsLoadResponse = SkillSummary.extend({ body: z.string() });
export type MemorySkillsLoadResponse = z.infer<typeof MemorySkillsLoadResponse>;
export const memorySkillsLoad = defineRpc(
  'memory.skills.load',
  MemorySkillsLoadRequest,
  MemorySkillsLoadResponse,
);
