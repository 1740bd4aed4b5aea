import { useEffect, useState } from 'preact/hooks';

// Blobs fetched this session, by a key the caller chooses. The API lets no HTTP cache keep its
// files (they may hold private data), so this one, in memory only, spares a second download
// when the chat redraws or a run is opened again. Bounded: the oldest goes first.
export type BlobCache = { load(key: string, fetchBlob: () => Promise<Blob>): Promise<Blob> };

export function createBlobCache(maxEntries: number): BlobCache {
  const entries = new Map<string, Promise<Blob>>();
  return {
    load(key, fetchBlob) {
      const cached = entries.get(key);
      if (cached) return cached;
      const loading = fetchBlob();
      // A failure is not kept: the next view asks again.
      loading.catch(() => entries.delete(key));
      entries.set(key, loading);
      if (entries.size > maxEntries) {
        const oldest = entries.keys().next().value;
        if (oldest !== undefined) entries.delete(oldest);
      }
      return loading;
    },
  };
}

// An <img> cannot send the key, so a picture is fetched with it and shown through an object URL
// (the page's policy allows blob: images, which only this page can make). The URL is revoked
// when the picture leaves the page or `key` changes.
export function useObjectUrl(
  key: string,
  loadBlob: () => Promise<Blob>,
  describeFailure: (failure: unknown) => string,
): { url?: string; error?: string } {
  const [state, setState] = useState<{ url?: string; error?: string }>({});

  // Not on `loadBlob`: a fresh closure at every render; `key` names what it loads.
  useEffect(() => {
    let isCurrent = true;
    let objectUrl: string | undefined;
    setState({});
    loadBlob().then(
      (blob) => {
        if (!isCurrent) return;
        objectUrl = URL.createObjectURL(blob);
        setState({ url: objectUrl });
      },
      (failure: unknown) => {
        if (isCurrent) setState({ error: describeFailure(failure) });
      },
    );
    return () => {
      isCurrent = false;
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [key]);

  return state;
}

// Saves a blob under a file name: a link to an object URL with `download`, clicked and gone.
// The key-carrying fetch is what the browser's own download could not do.
export function saveBlob(blob: Blob, fileName: string): void {
  const url = URL.createObjectURL(blob);
  const link = document.createElement('a');
  link.href = url;
  link.download = fileName;
  link.rel = 'noopener';
  document.body.append(link);
  link.click();
  link.remove();
  // Revoked after the click was handled: at once, some browsers cancel the download.
  window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
}
