import Anthropic from '@anthropic-ai/sdk';
import { BusError } from '@jarvis/bus';
import type { ModelChatResponse } from '@jarvis/contracts';
import type { Logger } from '@jarvis/telemetry';
import OpenAI from 'openai';
import type { ChatCall, ChatProvider } from '../providers/provider';

export async function chat(
  provider: ChatProvider,
  call: ChatCall,
  logger: Logger,
): Promise<ModelChatResponse> {
  try {
    const result = await provider.chat(call);
    return { ...result, provider: provider.name };
  } catch (error) {
    throw toBusError(provider, error, logger);
  }
}

// Provider errors become typed errors that say which model failed and how, never the prompt.
function toBusError(provider: ChatProvider, error: unknown, logger: Logger): BusError {
  const label = `${provider.name} model ${provider.model}`;
  if (
    error instanceof OpenAI.APIConnectionTimeoutError ||
    error instanceof Anthropic.APIConnectionTimeoutError
  ) {
    return new BusError('timeout', `${label} did not answer in time`);
  }
  if (error instanceof OpenAI.APIError || error instanceof Anthropic.APIError) {
    logger.warn({ provider: provider.name, status: error.status }, 'model call failed');
    const status = error.status === undefined ? 'no connection' : `HTTP ${error.status}`;
    return new BusError('unavailable', `${label} failed (${status})`);
  }
  logger.error({ err: error, provider: provider.name }, 'model call failed');
  return new BusError('unavailable', `${label} failed`);
}
