import type { Bus } from '@jarvis/bus';
import { modelChat } from '@jarvis/contracts';
import type { Logger } from '@jarvis/telemetry';
import type { ChatProvider } from './providers/provider';
import { chat } from './services/chat-service';

export function registerHandlers(bus: Bus, provider: ChatProvider, logger: Logger) {
  return [
    bus.serve(modelChat, (request) =>
      chat(
        provider,
        {
          messages: request.messages,
          maxTokens: request.maxTokens,
          temperature: request.temperature,
        },
        logger,
      ),
    ),
  ];
}
