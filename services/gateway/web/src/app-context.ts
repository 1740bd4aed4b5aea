import { createContext } from 'preact';
import { useContext } from 'preact/hooks';
import type { ApiClient } from './api-client';
import type { ChatStore } from './chat-store';

export type AppServices = { client: ApiClient; chat: ChatStore };

export const AppContext = createContext<AppServices | undefined>(undefined);

export function useApp(): AppServices {
  const services = useContext(AppContext);
  if (!services) throw new Error('useApp outside the signed-in app');
  return services;
}
