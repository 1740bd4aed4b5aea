import type { Bus } from '@jarvis/bus';
import type { Endpoint, Forward, RequestParts } from '@jarvis/contracts';
import type { RequestHandler } from 'express';
import { principalOf } from '../middleware/authenticate';
import { DEFAULT_TIME_ZONE } from '../services/me';
import { parseBody } from './parse-body';

type ForwardedEndpoint = Extract<Endpoint, { forward: Forward }>;

// An endpoint that only asks a bus contract: its path parameters, query and body parsed (in that
// order, so the first problem named is the same on every endpoint), the request built with the
// key's user, and the reply answered with the declared status. The user is always the key's: no
// HTTP schema has a userId, and it is set after the parsed input. Typed errors from the services
// are left to the api router's converter.
export function forwardToBus(bus: Bus, endpoint: ForwardedEndpoint): RequestHandler {
  const { rpc, toRequest } = endpoint.forward;
  const bodySchema = endpoint.body?.['application/json'];
  return async (req, res) => {
    const { userId, timeZone } = principalOf(req);
    const parts: RequestParts = {
      params: endpoint.params ? parseBody(endpoint.params, req.params) : {},
      query: endpoint.query ? parseBody(endpoint.query, req.query) : {},
      body: bodySchema ? parseBody(bodySchema, req.body) : {},
      userId,
      userTimeZone: timeZone ?? DEFAULT_TIME_ZONE,
      isUserTimeZoneSet: timeZone !== null,
    };
    const request = toRequest
      ? toRequest(parts)
      : { ...parts.query, ...parts.body, ...parts.params, userId };
    const reply = await bus.request(rpc, request);
    if (endpoint.status === 204) res.status(204).end();
    else res.status(endpoint.status).json(reply);
  };
}
