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
  ];
}
