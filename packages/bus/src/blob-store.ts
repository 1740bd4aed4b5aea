import { nanos, type ObjectStore, StorageType } from 'nats';
import type { Bus } from './bus';
import { BusError, isBusError } from './bus-error';

// Bytes too large for one NATS message (an upload, a document's extracted text), kept by name
// for a while so one service can hand them to another: the request carries the name instead.
export type BlobStore = {
  // Rejects with BusError('payload_too_large') past maxBytes and leaves nothing behind.
  put(
    name: string,
    data: Uint8Array | AsyncIterable<Uint8Array>,
    options?: { maxBytes?: number },
  ): Promise<{ name: string; size: number }>;
  // undefined when there is no such object (never written, deleted, or expired).
  get(name: string): Promise<Uint8Array | undefined>;
  // Deleting what is not there is not an error: cleanup paths run whether or not a put succeeded.
  delete(name: string): Promise<void>;
};

export type BlobStoreOptions = {
  // How long an object lives if nobody deletes it: the bound on what a crash between a put and
  // its delete leaves behind.
  ttlMs: number;
};

// A JetStream object store (chunked into messages under one stream), named within the bus's
// namespace so installs or test runs sharing one NATS server keep their objects apart. Whichever
// service opens it first creates it; an existing bucket keeps its settings.
export async function openBlobStore(
  bus: Bus,
  bucket: string,
  options: BlobStoreOptions,
): Promise<BlobStore> {
  const name = bus.streamName(bucket);
  const store = await reach(bus, bucket, () =>
    bus.nc.jetstream().views.os(name, {
      ttl: nanos(options.ttlMs),
      storage: StorageType.File,
    }),
  );
  return {
    put: (objectName, data, putOptions = {}) =>
      reach(bus, bucket, () => putObject(store, objectName, data, putOptions.maxBytes)),
    get: (objectName) =>
      reach(bus, bucket, async () => (await store.getBlob(objectName)) ?? undefined),
    delete: (objectName) =>
      reach(bus, bucket, async () => {
        await store.delete(objectName);
      }),
  };
}

async function putObject(
  store: ObjectStore,
  name: string,
  data: Uint8Array | AsyncIterable<Uint8Array>,
  maxBytes: number | undefined,
): Promise<{ name: string; size: number }> {
  const limit = maxBytes ?? Number.POSITIVE_INFINITY;
  if (data instanceof Uint8Array) {
    // Checked before anything is written, so an oversized buffer costs no round trip.
    if (data.byteLength > limit) throw tooLarge(limit);
    const info = await store.putBlob({ name }, data);
    return { name, size: info.size };
  }
  // The object store purges the chunks it wrote when the stream it reads from errors, so failing
  // the stream at the byte past the limit is what leaves nothing behind; the bucket's ttl is the
  // bound should that purge itself fail.
  const info = await store.put({ name }, limitedStream(data, limit));
  return { name, size: info.size };
}

function limitedStream(
  source: AsyncIterable<Uint8Array>,
  limit: number,
): ReadableStream<Uint8Array> {
  const iterator = source[Symbol.asyncIterator]();
  let size = 0;
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      let next: IteratorResult<Uint8Array>;
      try {
        next = await iterator.next();
      } catch (error) {
        // The producer failed (a client that went away mid-upload): its own error, not the bus's.
        throw new SourceFailed(error);
      }
      if (next.done) {
        controller.close();
        return;
      }
      size += next.value.byteLength;
      if (size > limit) {
        // Stop the producer too (a request body still arriving), or it would wait on a reader
        // that is gone.
        await iterator.return?.();
        throw tooLarge(limit);
      }
      controller.enqueue(next.value);
    },
    async cancel() {
      await iterator.return?.();
    },
  });
}

class SourceFailed extends Error {
  constructor(readonly reason: unknown) {
    super('the data source failed');
  }
}

function tooLarge(limit: number): BusError {
  return new BusError('payload_too_large', `the data is larger than the limit of ${limit} bytes`);
}

// The object store failing (NATS down or restarting) reaches callers as 'unavailable', which an
// API answers 503, rather than as a raw NATS error that would become a 500.
async function reach<T>(bus: Bus, bucket: string, work: () => Promise<T>): Promise<T> {
  bus.assertConnected();
  try {
    return await work();
  } catch (error) {
    if (isBusError(error)) throw error;
    if (error instanceof SourceFailed) throw error.reason;
    bus.logger.warn({ err: error, bucket }, 'blob store not reachable');
    throw new BusError('unavailable', `the ${bucket} blob store could not be reached`);
  }
}
