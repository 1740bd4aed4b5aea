import { BusError, isBusError } from '@jarvis/bus';
import type { ToolsInvokeRequest, ToolsInvokeResponse } from '@jarvis/contracts';
import type { Logger } from '@jarvis/telemetry';
import type { ToolRegistry } from './registry';

// One tool call, whatever the tool does: the caller gets its result or a typed error by the
// deadline, and nothing a tool throws (or throws late, after its deadline) takes the service down.
export async function invokeTool(
  registry: ToolRegistry,
  request: ToolsInvokeRequest,
  logger: Logger,
): Promise<ToolsInvokeResponse> {
  const tool = registry.get(request.name);
  if (!tool) throw new BusError('not_found', `there is no tool named ${request.name}`);
  const controller = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => {
      const error = new BusError(
        'timeout',
        `${request.name} did not finish within ${request.timeoutMs} ms`,
      );
      controller.abort(error);
      reject(error);
    }, request.timeoutMs);
  });
  try {
    // The race also handles a rejection the tool makes after the deadline.
    const result = await Promise.race([
      tool.call(request.arguments, {
        userId: request.userId,
        runId: request.runId,
        conversationId: request.conversationId,
        missionId: request.missionId,
        signal: controller.signal,
      }),
      timedOut,
    ]);
    // Through JSON and back: what the caller gets is exactly what survives the wire (undefined
    // fields dropped, dates as strings), and a result that cannot be sent fails here, named.
    return { result: JSON.parse(JSON.stringify(result ?? null)) };
  } catch (error) {
    if (isBusError(error)) throw error;
    logger.error({ err: error, tool: request.name }, 'tool failed');
    throw new BusError('internal', `${request.name} failed unexpectedly`);
  } finally {
    clearTimeout(timer);
  }
}
