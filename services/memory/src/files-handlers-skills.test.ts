import { randomUUID } from 'node:crypto';
import type { Bus } from '@jarvis/bus';
import { catchBusError } from '@jarvis/bus/testing';
import {
  memoryFilesDelete,
  memoryFilesEdit,
  memoryFilesList,
  memoryFilesRead,
  memoryFilesRestore,
  memoryFilesWrite,
  memorySkillsList,
  memorySkillsLoad,
  SKILLS_MAX,
} from '@jarvis/contracts';
import type { TestDatabase } from '@jarvis/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerFileHandlers } from './files-handlers';
import { type MemoryFixture, startMemoryFixture } from './memory-fixture';
import { listSkills } from './services/skills';

let memory: MemoryFixture;
let db: TestDatabase;
let clientBus: Bus;

beforeAll(async () => {
  memory = await startMemoryFixture('memory-skills', [registerFileHandlers]);
  ({ db, clientBus } = memory);
});

afterAll(async () => {
  await memory?.stop();
});

function skillFile(name: string, description: string, procedure: string): string {
  return `---\nname: ${name}\ndescription: ${description}\n---\n${procedure}\n`;
}

function write(userId: string, path: string, content: string) {
  return clientBus.request(memoryFilesWrite, { userId, path, content });
}

function writeSkill(userId: string, name: string, description = `How to ${name}`) {
  return write(userId, `skills/${name}.md`, skillFile(name, description, `Steps for ${name}.`));
}

function list(userId: string) {
  return clientBus.request(memorySkillsList, { userId });
}

function load(userId: string, name: string) {
  return clientBus.request(memorySkillsLoad, { userId, name });
}

async function livePaths(userId: string): Promise<string[]> {
  const { files } = await clientBus.request(memoryFilesList, { userId });
  return files.map((file) => file.path);
}

describe('memory.skills.list and memory.skills.load', () => {
  it('lists each skill file by name and loads its procedure', async () => {
    const userId = randomUUID();
    await writeSkill(userId, 'weekly-review', 'Friday review of the week');
    await write(
      userId,
      'skills/trip-planning.md',
      skillFile('trip-planning', 'How I like trips planned', '1. No flights before 9.'),
    );
    await write(userId, 'notes/skills.md', 'not a skill, and not under skills/');

    expect(await list(userId)).toEqual({
      skills: [
        { name: 'trip-planning', description: 'How I like trips planned' },
        { name: 'weekly-review', description: 'Friday review of the week' },
      ],
    });
    expect(await load(userId, 'trip-planning')).toEqual({
      name: 'trip-planning',
      description: 'How I like trips planned',
      body: '1. No flights before 9.\n',
    });
    expect(await listSkills(db.pool, userId)).toEqual((await list(userId)).skills);
  });

  it("shows one user none of another's skills", async () => {
    const alice = randomUUID();
    const bob = randomUUID();
    await writeSkill(alice, 'secret-recipe');

    expect(await list(bob)).toEqual({ skills: [] });
    const error = await catchBusError(load(bob, 'secret-recipe'));
    expect(error).toMatchObject({ code: 'not_found', message: 'no skill named "secret-recipe"' });
  });

  it('answers not_found to a name with no skill, and bad_request to one no skill can have', async () => {
    const userId = randomUUID();

    const missing = await catchBusError(load(userId, 'nothing-here'));
    const invalid = await catchBusError(load(userId, '../notes/a'));

    expect(missing.code).toBe('not_found');
    expect(invalid.code).toBe('bad_request');
  });

  it('takes a deleted skill out of the list, and loads an edited one as it now is', async () => {
    const userId = randomUUID();
    await writeSkill(userId, 'gone');
    await writeSkill(userId, 'kept', 'Old description');

    await clientBus.request(memoryFilesDelete, { userId, path: 'skills/gone.md' });
    await clientBus.request(memoryFilesEdit, {
      userId,
      path: 'skills/kept.md',
      old: 'Old description',
      new: 'New description',
    });

    expect(await list(userId)).toEqual({
      skills: [{ name: 'kept', description: 'New description' }],
    });
    expect((await catchBusError(load(userId, 'gone'))).code).toBe('not_found');
  });

  it('leaves out a file under skills/ that is not a skill (one stored before skills were checked)', async () => {
    const userId = randomUUID();
    await writeSkill(userId, 'good');
    await db.pool.query(
      `INSERT INTO memory.files (id, user_id, path, content, tags, metadata)
       VALUES ($1, $2, 'skills/old.md', 'no front matter at all', '{}', '{}')`,
      [randomUUID(), userId],
    );

    expect(await list(userId)).toEqual({
      skills: [{ name: 'good', description: 'How to good' }],
    });
    expect((await catchBusError(load(userId, 'old'))).code).toBe('not_found');
  });
});

describe('writes under skills/', () => {
  it('refuses bad front matter, saying the format, and stores nothing', async () => {
    const userId = randomUUID();

    const error = await catchBusError(
      write(userId, 'skills/trip.md', '# Trip\nNo flights before 9.'),
    );

    expect(error.code).toBe('bad_request');
    expect(error.message).toMatch(/^content: skills\/trip\.md is not a skill: it must start with/);
    expect(error.message).toContain('"name: <name>", "description: <what it is for');
    expect(await livePaths(userId)).toEqual([]);
  });

  it('refuses a name that is not the file name, naming both', async () => {
    const userId = randomUUID();

    const error = await catchBusError(
      write(userId, 'skills/trip.md', skillFile('travel', 'Trips', 'Steps')),
    );

    expect(error.code).toBe('bad_request');
    expect(error.message).toContain('name "travel" must be the file\'s name, "trip"');
  });

  it.each([
    'skills/Trip.md',
    'skills/trip.txt',
    'skills/travel/trip.md',
    'skills/-trip.md',
  ])('refuses the path %s, which cannot hold a skill', async (path) => {
    const userId = randomUUID();

    const error = await catchBusError(write(userId, path, skillFile('trip', 'Trips', 'Steps')));

    expect(error.code).toBe('bad_request');
    expect(error.message).toMatch(/^path: .* is not a skill: its name is not <name>\.md\. A skill/);
  });

  it('refuses a skill with no procedure', async () => {
    const userId = randomUUID();

    const error = await catchBusError(
      write(userId, 'skills/empty.md', '---\nname: empty\ndescription: Nothing\n---\n  \n'),
    );

    expect(error.message).toContain('the procedure after the front matter is empty');
  });

  it('refuses an edit or a restore that would leave a file under skills/ not a skill', async () => {
    const userId = randomUUID();
    await writeSkill(userId, 'trip', 'Trips');
    await writeSkill(userId, 'trip', 'Trips, again');
    // Version 1 as a file written before skills were checked would hold it.
    await db.pool.query(
      `UPDATE memory.file_versions SET content = 'plain text'
       WHERE version = 1
         AND file_id = (SELECT id FROM memory.files WHERE user_id = $1 AND path = 'skills/trip.md')`,
      [userId],
    );

    const edited = await catchBusError(
      clientBus.request(memoryFilesEdit, {
        userId,
        path: 'skills/trip.md',
        old: 'name: trip\n',
        new: '',
      }),
    );
    const restored = await catchBusError(
      clientBus.request(memoryFilesRestore, { userId, path: 'skills/trip.md', version: 1 }),
    );

    expect(edited.message).toContain('the front matter has no name');
    expect(restored.message).toContain('must start with front matter');
    const { file } = await clientBus.request(memoryFilesRead, { userId, path: 'skills/trip.md' });
    expect(file).toMatchObject({ version: 2, content: expect.stringContaining('Trips, again') });
  });

  it(`refuses a new skill past ${SKILLS_MAX}, and still takes a new version of one`, async () => {
    const userId = randomUUID();
    for (let index = 0; index < SKILLS_MAX; index += 1) await writeSkill(userId, `skill-${index}`);

    const error = await catchBusError(writeSkill(userId, 'one-more'));
    const { file } = await writeSkill(userId, 'skill-0', 'Rewritten');

    expect(error.code).toBe('conflict');
    expect(error.message).toContain(`you have ${SKILLS_MAX} skills`);
    expect(file.version).toBe(2);
    expect((await list(userId)).skills).toHaveLength(SKILLS_MAX);
  });

  it('leaves other folders as they were: any content, any name', async () => {
    const userId = randomUUID();

    await write(userId, 'notes/Skills list.txt', 'no front matter');

    expect(await livePaths(userId)).toEqual(['notes/Skills list.txt']);
  });
});
