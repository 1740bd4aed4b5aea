import type { Bus } from '@jarvis/bus';
import { TurnEvent } from '@jarvis/contracts';
import type { BrowserPool } from './browser-pool';

// Closes a run's page when its turn ends: it failed, or it answered without pausing for an
// approval. A run paused on a risky call keeps its page, so browser_act, once approved, acts on
// what the user was shown; if no answer comes, the idle timer closes it.
export function closePagesWhenRunsEnd(bus: Bus, pool: BrowserPool) {
  return bus.subscribe('turns.events.*', TurnEvent, (event) => {
    if (event.type === 'failed' || (event.type === 'done' && event.approval === undefined)) {
      void pool.closeRun(event.runId);
    }
  });
}
