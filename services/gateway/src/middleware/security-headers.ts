import helmet from 'helmet';

// The usual security headers, with a content security policy cut to what the web UI loads: its
// one script and one stylesheet, its favicon, and the /v1 API, all from this origin. No inline
// styles or scripts (the UI sets none in its markup; Preact's style properties go through the
// CSSOM, which the policy does not govern), no fonts or images from elsewhere. Without
// upgrade-insecure-requests: Traefik already sends plain HTTP to HTTPS, and a browser on
// http://127.0.0.1 (make dev, the browser test) would load nothing.
export function securityHeaders() {
  return helmet({
    contentSecurityPolicy: {
      directives: {
        fontSrc: ["'self'"],
        imgSrc: ["'self'"],
        styleSrc: ["'self'"],
        upgradeInsecureRequests: null,
      },
    },
  });
}
