import { HttpError } from '@jarvis/service-kit';
import type { RequestHandler } from 'express';

// Query parameters clients commonly put credentials in.
const KEY_PARAMETERS = new Set(['api_key', 'apikey', 'key', 'token', 'access_token']);

// A key in a URL ends up in proxy logs, browser history and Referer headers, so one is refused
// even when the Authorization header is right, before anything reads or logs the request.
export const refuseKeyInUrl: RequestHandler = (req, _res, next) => {
  const names = Object.keys(req.query).map((name) => name.toLowerCase());
  if (!names.some((name) => KEY_PARAMETERS.has(name))) return next();
  next(
    new HttpError(
      'bad_request',
      'API keys are accepted only in the Authorization header ("Authorization: Bearer <key>"), never in the URL',
    ),
  );
};
