import { HttpError } from '@jarvis/service-kit';
import express, { type RequestHandler } from 'express';
import { isNestedTooDeep, JSON_TOO_DEEP } from '../services/json-depth';

// Every JSON body the gateway reads goes through here: parsed within its size limit, and refused
// with a 400 when it nests deeper than any route takes.
export function jsonBody(limitBytes: number): RequestHandler {
  const parse = express.json({ limit: limitBytes });
  return (req, res, next) => {
    parse(req, res, (error?: unknown) => {
      if (error) return next(error);
      if (isNestedTooDeep(req.body)) return next(new HttpError('bad_request', JSON_TOO_DEEP));
      next();
    });
  };
}
