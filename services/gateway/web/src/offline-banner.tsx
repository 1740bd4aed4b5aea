import { useEffect, useState } from 'preact/hooks';

// Says the device is offline (navigator.onLine and its events): the app shell still opens from
// the service worker's cache, but nothing the API holds can load or be sent until the
// connection returns. The status badge beside it tells of the server; this, of the device.
export function OfflineBanner() {
  const [isOnline, setOnline] = useState(navigator.onLine);
  useEffect(() => {
    const update = () => setOnline(navigator.onLine);
    window.addEventListener('online', update);
    window.addEventListener('offline', update);
    return () => {
      window.removeEventListener('online', update);
      window.removeEventListener('offline', update);
    };
  }, []);
  if (isOnline) return null;
  return (
    <output
      class="offline-banner"
      title="This device has no connection: what you see may be out of date."
    >
      Offline
    </output>
  );
}
