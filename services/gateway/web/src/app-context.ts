import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ApiClient } from './api-client';
import type { ChatStore } from './chat-store';
import type { UserEventsFeed } from './user-events';

export type AppServices = { client: ApiClient; chat: ChatStore; events: UserEventsFeed };

export const AppContext = createContext<AppServices | undefined>(undefined);

export function useApp(): AppServices {
  const services = useContext(AppContext);
  if (!services) throw new Error('useApp outside the signed-in app');
  return services;
}
