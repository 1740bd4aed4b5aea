import type { Bus } from '@jarvis/bus';
import { memoryExportPage, memoryImportRecords } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { exportPage } from './services/export-service';
import { importRecords } from './services/import-records-service';

export function registerExportHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryExportPage, (request) => exportPage(pool, request)),
    bus.serve(memoryImportRecords, (request) => importRecords(pool, request)),
  ];
}
