import type { RpcContract } from '@jarvis/contracts';
import {
  extractTraceContext,
  injectTraceContext,
  type Logger,
  type Metrics,
  SpanKind,
  withSpan,
} from '@jarvis/telemetry';
import {
  connect,
  createInbox,
  DebugEvents,
  ErrorCode,
  Events,
  type Msg,
  type NatsConnection,
  NatsError,
  type Subscription,
} from 'nats';
import { z } from 'zod';
import { BusError, isBusError, isConnectionError } from './bus-error';
import {
  carrierFrom,
  decodeJson,
  describeZodError,
  encodeJson,
  headersFrom,
  parseOrThrow,
  ReplyEnvelope,
} from './codec';
import { type ConsumerMetrics, createConsumerMetrics } from './consumer-metrics';

export type BusOptions = {
  url: string;
  // Prefix of every subject and stream, so installs or test runs can share one NATS server.
  namespace: string;
  name: string;
  logger: Logger;
  // The service's registry: the durable consumers it reads are gauged there (consumer-metrics).
  metrics?: Metrics;
};

export type RequestOptions = { timeoutMs?: number };

export type HandlerContext = { subject: string };

export type RpcHandler<Req extends z.ZodType, Res extends z.ZodType> = (
  request: z.output<Req>,
  context: HandlerContext,
) => Promise<z.input<Res>>;

const DEFAULT_TIMEOUT_MS = 5_000;

// What a caller hears while NATS is down: the API answers it as a 503 at once.
const BUS_UNAVAILABLE_MESSAGE = 'the message bus is unavailable';

export class Bus {
  readonly nc: NatsConnection;
  readonly namespace: string;
  readonly logger: Logger;
  private connected = true;
  private closing: Promise<void> | undefined;
  // Requests in flight, failed when the connection drops: their replies can no longer arrive,
  // and waiting out the timeout would answer "did not answer in time" for an outage.
  private readonly inFlight = new Set<(error: BusError) => void>();
  private readonly consumerMetrics: ConsumerMetrics | undefined;

  private constructor(nc: NatsConnection, options: BusOptions) {
    this.nc = nc;
    this.namespace = options.namespace;
    this.logger = options.logger;
    this.consumerMetrics =
      options.metrics &&
      createConsumerMetrics(nc, () => this.isConnected(), options.metrics, options.logger);
    void this.watchStatus();
  }

  static async connect(options: BusOptions): Promise<Bus> {
    const nc = await connect({
      servers: options.url,
      name: options.name,
      // Keep trying forever: the service's dependency watchdog decides when to give up.
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      // The client would otherwise capture a stack trace for every request and JetStream publish,
      // in case it times out, a cost paid on every hop of a turn that CPU profiles show. A
      // failed request becomes a BusError that names the service anyway (toBusError).
      noAsyncTraces: true,
    });
    return new Bus(nc, options);
  }

  isConnected(): boolean {
    return this.connected && !this.nc.isClosed();
  }

  // Fails at once while NATS is down (reconnecting or closed): anything sent now would be
  // buffered by the client and answered only by its timeout.
  assertConnected(): void {
    if (!this.isConnected()) throw new BusError('unavailable', BUS_UNAVAILABLE_MESSAGE);
  }

  // A durable consumer this process reads (startWorker), gauged in its metrics until the
  // returned function is called.
  trackConsumer(stream: string, consumer: string): () => void {
    return this.consumerMetrics?.track(stream, consumer) ?? (() => {});
  }

  subject(relative: string): string {
    return `${this.namespace}.${relative}`;
  }

  streamName(relative: string): string {
    return `${this.namespace}_${relative}`.toUpperCase().replace(/[^A-Z0-9_-]/g, '_');
  }

  // Calls a service and returns its validated data; a typed error reply is thrown as BusError.
  async request<Req extends z.ZodType, Res extends z.ZodType>(
    contract: RpcContract<Req, Res>,
    request: z.input<Req>,
    options: RequestOptions = {},
  ): Promise<z.output<Res>> {
    const body = parseOrThrow(contract.request, request);
    const subject = this.subject(contract.subject);
    return withSpan(
      `request ${contract.subject}`,
      { kind: SpanKind.CLIENT, attributes: { 'messaging.destination.name': subject } },
      async () => {
        this.assertConnected();
        const reply = await this.send(subject, body, contract.subject, options);
        const envelope = ReplyEnvelope.safeParse(safeDecode(reply.data));
        if (!envelope.success) {
          throw new BusError('internal', `malformed reply from ${contract.subject}`);
        }
        if (!envelope.data.ok) {
          throw new BusError(envelope.data.error.code, envelope.data.error.message);
        }
        const data = z.safeParse(contract.response, envelope.data.data);
        if (!data.success) {
          throw new BusError(
            'internal',
            `reply from ${contract.subject} broke its contract: ${describeZodError(data.error)}`,
          );
        }
        return data.data;
      },
    );
  }

  private async send(
    subject: string,
    body: unknown,
    relative: string,
    options: RequestOptions,
  ): Promise<Msg> {
    let failOnDisconnect = (_error: BusError) => {};
    const disconnected = new Promise<never>((_resolve, reject) => {
      failOnDisconnect = reject;
    });
    this.inFlight.add(failOnDisconnect);
    try {
      const request = this.nc.request(subject, encodeJson(body), {
        timeout: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
        headers: headersFrom(injectTraceContext()),
      });
      return await Promise.race([request, disconnected]);
    } catch (error) {
      throw isBusError(error) ? error : toBusError(error, relative);
    } finally {
      this.inFlight.delete(failOnDisconnect);
    }
  }

  // A request whose handler also sends pieces of its answer as they come (streamTo): they reach
  // onChunk, in order, before the reply. The contract's request must take `streamTo`.
  async requestStreaming<Req extends z.ZodType, Res extends z.ZodType, C extends z.ZodType>(
    contract: RpcContract<Req, Res>,
    request: z.input<Req> & { streamTo?: string },
    chunk: C,
    onChunk: (payload: z.output<C>) => void,
    options: RequestOptions = {},
  ): Promise<z.output<Res>> {
    const inbox = createInbox();
    const subscription = this.nc.subscribe(inbox, {
      callback: (error, msg) => {
        if (error) return;
        const parsed = chunk.safeParse(safeDecode(msg.data));
        if (parsed.success) onChunk(parsed.data);
        else this.logger.warn({ subject: contract.subject }, 'dropped malformed stream chunk');
      },
    });
    try {
      return await this.request(contract, { ...request, streamTo: inbox }, options);
    } finally {
      subscription.unsubscribe();
    }
  }

  // One piece of a streamed answer, to the requester's inbox (not namespaced: NATS made it).
  sendChunk<P extends z.ZodType>(inbox: string, schema: P, payload: z.input<P>): void {
    this.nc.publish(inbox, encodeJson(parseOrThrow(schema, payload)));
  }

  // Answers a contract's requests. Replicas share the work through one queue group per subject.
  serve<Req extends z.ZodType, Res extends z.ZodType>(
    contract: RpcContract<Req, Res>,
    handler: RpcHandler<Req, Res>,
  ): Subscription {
    const subject = this.subject(contract.subject);
    return this.nc.subscribe(subject, {
      queue: subject,
      callback: (error, msg) => {
        if (error) {
          this.logger.error({ err: error, subject }, 'subscription failed');
          return;
        }
        this.answer(contract, handler, msg).catch((failure: unknown) => {
          this.logger.error({ err: failure, subject }, 'could not answer');
        });
      },
    });
  }

  private async answer<Req extends z.ZodType, Res extends z.ZodType>(
    contract: RpcContract<Req, Res>,
    handler: RpcHandler<Req, Res>,
    msg: Msg,
  ): Promise<void> {
    const parent = extractTraceContext(carrierFrom(msg.headers));
    await withSpan(
      `handle ${contract.subject}`,
      { kind: SpanKind.SERVER, parent, attributes: { 'messaging.destination.name': msg.subject } },
      async () => {
        let envelope: z.infer<typeof ReplyEnvelope>;
        try {
          const request = parseOrThrow(contract.request, decodeJson(msg.data));
          const result = await handler(request, { subject: msg.subject });
          const data = z.safeParse(contract.response, result);
          if (!data.success) {
            throw new Error(`handler broke its contract: ${describeZodError(data.error)}`);
          }
          envelope = { ok: true, data: data.data };
        } catch (error) {
          if (isBusError(error)) {
            envelope = { ok: false, error: error.toInfo() };
          } else if (isConnectionError(error)) {
            this.logger.warn({ err: error, subject: contract.subject }, 'dependency unreachable');
            const service = serviceOf(contract.subject);
            const message = `${service} cannot reach its database or cache`;
            envelope = { ok: false, error: { code: 'unavailable', message } };
          } else {
            this.logger.error({ err: error, subject: contract.subject }, 'handler failed');
            envelope = { ok: false, error: { code: 'internal', message: 'internal error' } };
          }
        }
        this.respond(msg, contract.subject, envelope);
      },
    );
  }

  // A reply over the server's payload limit cannot be sent: say so instead, or the caller would
  // wait out its timeout for an answer that never comes.
  private respond(msg: Msg, subject: string, envelope: z.infer<typeof ReplyEnvelope>): void {
    try {
      msg.respond(encodeJson(envelope));
    } catch (error) {
      this.logger.error({ err: error, subject }, 'reply could not be sent');
      const message = 'the reply is too large; ask for less (a smaller limit or a part)';
      msg.respond(encodeJson({ ok: false, error: { code: 'payload_too_large', message } }));
    }
  }

  // Fire-and-forget event on core NATS (not durable: listeners that are away miss it).
  publish<P extends z.ZodType>(subject: string, schema: P, payload: z.input<P>): void {
    const body = parseOrThrow(schema, payload);
    this.nc.publish(this.subject(subject), encodeJson(body), {
      headers: headersFrom(injectTraceContext()),
    });
  }

  subscribe<P extends z.ZodType>(
    subject: string,
    schema: P,
    handler: (payload: z.infer<P>) => void,
  ): Subscription {
    return this.nc.subscribe(this.subject(subject), {
      callback: (error, msg) => {
        if (error) return;
        const parsed = schema.safeParse(safeDecode(msg.data));
        if (!parsed.success) {
          this.logger.warn({ subject: msg.subject }, 'dropped malformed event');
          return;
        }
        handler(parsed.data);
      },
    });
  }

  // Safe to call from several shutdown paths at once: they share one drain.
  close(): Promise<void> {
    if (this.nc.isClosed()) return Promise.resolve();
    this.closing ??= this.nc.drain();
    return this.closing;
  }

  private async watchStatus(): Promise<void> {
    for await (const status of this.nc.status()) {
      if (status.type === Events.Disconnect) {
        this.connected = false;
        this.logger.warn('nats disconnected');
        this.failInFlight();
      } else if (status.type === Events.Reconnect) {
        this.connected = true;
        this.logger.info('nats reconnected');
      } else if (status.type === DebugEvents.Reconnecting) {
        this.connected = false;
      }
    }
  }

  private failInFlight(): void {
    const error = new BusError('unavailable', BUS_UNAVAILABLE_MESSAGE);
    for (const fail of this.inFlight) fail(error);
    this.inFlight.clear();
  }
}

function safeDecode(data: Uint8Array): unknown {
  try {
    return decodeJson(data);
  } catch {
    return undefined;
  }
}

function toBusError(error: unknown, subject: string): BusError {
  if (error instanceof NatsError) {
    if (error.code === ErrorCode.NoResponders) {
      return new BusError('unavailable', `${serviceOf(subject)} is not available`);
    }
    if (error.code === ErrorCode.Timeout) {
      return new BusError('timeout', `${serviceOf(subject)} did not answer in time`);
    }
  }
  return new BusError('unavailable', `${serviceOf(subject)} could not be reached`);
}

// 'memory.messages.append' -> 'memory service'
function serviceOf(subject: string): string {
  return `${subject.split('.')[0] ?? subject} service`;
}
