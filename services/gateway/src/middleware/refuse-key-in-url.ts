import { HttpError } from '@jarvis/service-kit';
import type { Request, RequestHandler } from 'express';
import { containsApiKey } from '../services/api-keys';

// Query parameters clients commonly put credentials in, refused whatever their value.
const KEY_PARAMETERS = new Set(['api_key', 'apikey', 'key', 'token', 'access_token']);

// Read from the URL as sent rather than req.query, whose parser turns names like a[b]=c into
// objects and would hide a value from the check.
function hasKeyInQuery(req: Request): boolean {
  const start = req.originalUrl.indexOf('?');
  if (start < 0) return false;
  for (const [name, value] of new URLSearchParams(req.originalUrl.slice(start + 1))) {
    if (KEY_PARAMETERS.has(name.toLowerCase())) return true;
    if (containsApiKey(name) || containsApiKey(value)) return true;
  }
  return false;
}

// A key in a URL ends up in proxy logs, browser history and Referer headers, so one is refused
// under any parameter name, even when the Authorization header is right, before anything reads
// or logs the request.
export const refuseKeyInUrl: RequestHandler = (req, _res, next) => {
  if (!hasKeyInQuery(req)) return next();
  next(
    new HttpError(
      'bad_request',
      'API keys are accepted only in the Authorization header ("Authorization: Bearer <key>"), never in the URL',
    ),
  );
};
