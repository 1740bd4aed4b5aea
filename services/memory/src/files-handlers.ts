import type { Bus } from '@jarvis/bus';
import {
  memoryFilesDelete,
  memoryFilesEdit,
  memoryFilesGrep,
  memoryFilesHistory,
  memoryFilesList,
  memoryFilesRead,
  memoryFilesRestore,
  memoryFilesSearch,
  memoryFilesWrite,
  memorySkillsList,
  memorySkillsLoad,
} from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import {
  deleteFile,
  editFile,
  grepFiles,
  listFileHistory,
  listFiles,
  readFile,
  restoreFile,
  searchFiles,
  writeFile,
} from './services/files-service';
import { listSkills, loadSkill } from './services/skills';

// Skills are memory files (skills/<name>.md), so their subjects are served with the files'.
export function registerFileHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryFilesList, (request) => listFiles(pool, request)),
    bus.serve(memoryFilesRead, (request) => readFile(pool, request)),
    bus.serve(memoryFilesWrite, (request) => writeFile(pool, request)),
    bus.serve(memoryFilesEdit, (request) => editFile(pool, request)),
    bus.serve(memoryFilesGrep, (request) => grepFiles(pool, request)),
    bus.serve(memoryFilesSearch, (request) => searchFiles(pool, request)),
    bus.serve(memoryFilesDelete, (request) => deleteFile(pool, request)),
    bus.serve(memoryFilesHistory, (request) => listFileHistory(pool, request)),
    bus.serve(memoryFilesRestore, (request) => restoreFile(pool, request)),
    bus.serve(memorySkillsList, async (request) => ({
      skills: await listSkills(pool, request.userId),
    })),
    bus.serve(memorySkillsLoad, (request) => loadSkill(pool, request)),
  ];
}
