import { BusError } from '@jarvis/bus';

// A service that is restarting or slow: worth asking again later, unlike a refusal.
export function isTransient(error: unknown): boolean {
  return error instanceof BusError && (error.code === 'unavailable' || error.code === 'timeout');
}
