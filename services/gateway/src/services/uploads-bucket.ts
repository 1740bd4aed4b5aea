import { type BlobStore, type Bus, openBlobStore } from '@jarvis/bus';
import { UPLOADS_BUCKET, UPLOADS_TTL_MS } from '@jarvis/contracts';

// The uploads bucket, opened on the first use (not at boot: a gateway that moves no files needs
// no object store) and again after a failed attempt.
export function lazyUploadsBucket(bus: Bus): () => Promise<BlobStore> {
  let opening: Promise<BlobStore> | undefined;
  return () => {
    opening ??= openBlobStore(bus, UPLOADS_BUCKET, { ttlMs: UPLOADS_TTL_MS }).catch(
      (error: unknown) => {
        opening = undefined;
        throw error;
      },
    );
    return opening;
  };
}
