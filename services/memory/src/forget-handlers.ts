import type { Bus } from '@jarvis/bus';
import { memoryForgetApply, memoryForgetPreview } from '@jarvis/contracts';
import type { Pool } from '@jarvis/db';
import { applyForget, previewForget } from './services/forget-service';

export function registerForgetHandlers(bus: Bus, pool: Pool) {
  return [
    bus.serve(memoryForgetPreview, (request) => previewForget(pool, request)),
    bus.serve(memoryForgetApply, (request) => applyForget(pool, request)),
  ];
}
