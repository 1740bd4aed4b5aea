import type { MeResponse } from '@jarvis/contracts';
import { useApp } from './app-context';
import { useResource } from './use-resource';

// The signed-in user, whose zone every time on the Schedules and Settings pages is told in: a
// schedule's own zone is its rule's, but the user reads times on their own clock.
export function useMe() {
  const { client } = useApp();
  return useResource('me', () => client.get<MeResponse>('/v1/me'));
}
