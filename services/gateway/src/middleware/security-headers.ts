import helmet from 'helmet';

// The usual security headers, with a content security policy cut to what the web UI loads: its
// one script and one stylesheet, its favicon, and the /v1 API, all from this origin, and the
// browser's screenshots as blob: URLs (fetched with the key, which an <img src> cannot send; a
// blob: URL is only ever one this page made itself, never a remote address). No inline
// styles or scripts (the UI sets none in its markup; Preact's style properties go through the
// CSSOM, which the policy does not govern), no fonts or images from elsewhere. Without
// upgrade-insecure-requests: Traefik already sends plain HTTP to HTTPS, and a browser on
// http://127.0.0.1 (make dev, the browser test) would load nothing.
// The web manifest and the service worker (/sw.js) need no directive of their own: helmet's
// default-src and script-src 'self' cover manifest-src and worker-src.
export function securityHeaders() {
  return helmet({
    contentSecurityPolicy: {
      directives: {
        fontSrc: ["'self'"],
        imgSrc: ["'self'", 'blob:'],
        styleSrc: ["'self'"],
        upgradeInsecureRequests: null,
      },
    },
  });
}
