import type { z } from 'zod';
import type { RpcContract } from '../define';
import type { ErrorCode } from '../errors';

// Media type to schema, as in OpenAPI's `content`: an endpoint may answer several (JSON, or a
// stream of server-sent events when asked with Accept).
export type EndpointContent = Record<string, z.ZodType>;

// Who may call an endpoint: anyone (no key), any key's user, or admin keys only.
export type EndpointAuth = 'none' | 'user' | 'admin';

// The gateway's handlers for endpoints with logic of their own (streams, uploads, keys, several
// bus calls); every name here has one, and the type checker holds the gateway to it.
export type GatewayHandler =
  | 'chat'
  | 'userEvents'
  | 'importMessages'
  | 'importChatGpt'
  | 'exportMemory'
  | 'importMemory'
  | 'ingestDocument'
  | 'getScreenshot'
  | 'getWorkspaceFile'
  | 'putWorkspaceFile'
  | 'deleteWorkspaceFile'
  | 'decideApproval'
  | 'listKeys'
  | 'createKey'
  | 'revokeKey'
  | 'listUsers'
  | 'createUser'
  | 'revokeAnyKey'
  | 'notifyAlerts'
  | 'openApiDocument'
  | 'docsPage'
  | 'docsAsset'
  | 'getMe'
  | 'updateMe';

// The parsed parts of a request, with the key's user.
export type RequestParts = {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  // A forwarded endpoint's body is a JSON object; {} when it takes none.
  body: Record<string, unknown>;
  userId: string;
  // The user's stored zone (UTC while none is set).
  userTimeZone: string;
  isUserTimeZoneSet: boolean;
};

// An endpoint that only forwards to a bus contract: the gateway parses the request, asks the
// contract and answers its reply. The request is the query, the body and the path parameters
// merged, with the key's userId, unless toRequest builds it (the contract validates it either
// way).
export type Forward = {
  rpc: RpcContract<z.ZodType, z.ZodType>;
  toRequest?(parts: RequestParts): unknown;
};

// One HTTP endpoint under /v1, declared once: the gateway mounts it, the OpenAPI document
// describes it and the e2e fuzz test calls it, all from this.
export type Endpoint = {
  method: 'get' | 'post' | 'put' | 'patch' | 'delete';
  // The full path, with OpenAPI's {name} for each path parameter.
  path: string;
  // The last path parameter, when it spans several segments (a file path in a workspace, with
  // its '/'s): the gateway mounts it as a wildcard, and its handler reads it.
  multiSegmentParam?: string;
  summary: string;
  description?: string;
  tag: string;
  auth: EndpointAuth;
  params?: z.ZodObject;
  query?: z.ZodObject;
  headers?: z.ZodObject;
  // A body that may be left out altogether.
  isBodyOptional?: boolean;
  status: 200 | 201 | 202 | 204;
  // Absent: the answer has no body (204).
  response?: EndpointContent;
  // Describe the answer by what its schema accepts rather than what it outputs: for a file
  // format that reads back (the memory export), whose transforms have no JSON Schema output.
  isResponseInputShaped?: boolean;
  // Errors beyond those that follow from the endpoint's shape (any request can be malformed,
  // a key can be wrong, a body too large): the OpenAPI document lists both.
  errors?: ErrorCode[];
} & (
  | { forward: Forward; body?: { 'application/json': z.ZodObject } }
  | { handler: GatewayHandler; body?: EndpointContent }
);

export const json = <S extends z.ZodType>(schema: S) => ({ 'application/json': schema });
// A form with files, read part by part by its handler: the schema describes its fields for the
// OpenAPI document (a file is a string of format binary).
export const multipart = (schema: z.ZodObject): EndpointContent => ({
  'multipart/form-data': schema,
});
export const ndjson = (schema: z.ZodType): EndpointContent => ({
  'application/x-ndjson': schema,
});

// "GET /v1/runs/{id}": how tests and error messages name an endpoint.
export function endpointName(endpoint: Pick<Endpoint, 'method' | 'path'>): string {
  return `${endpoint.method.toUpperCase()} ${endpoint.path}`;
}
