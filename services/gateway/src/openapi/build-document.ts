import {
  AdminUser,
  ApiKeyInfo,
  Approval,
  ApprovalRequest,
  DocumentEntry,
  ErrorBody,
  type ErrorCode,
  Fact,
  HTTP_STATUS_BY_CODE,
  MemoryFileInfo,
  Mission,
  MissionDetail,
  RunSummary,
  Usage,
} from '@jarvis/contracts';
import { z } from 'zod';
import type { ApiRoute, RouteContent } from './route-table';

type JsonSchema = z.core.JSONSchema.BaseSchema;

type Parameter = {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: JsonSchema;
  description?: string;
};

type MediaTypes = Record<string, { schema: JsonSchema }>;

type HeaderRef = { $ref: string };

type ResponseObject = {
  description: string;
  headers: Record<string, HeaderRef>;
  content?: MediaTypes;
};

type Operation = {
  tags: string[];
  summary: string;
  description?: string;
  security: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { required: boolean; content: MediaTypes };
  responses: Record<string, ResponseObject>;
};

export type OpenApiDocument = {
  openapi: '3.1.1';
  info: { title: string; version: string; description: string };
  tags: { name: string }[];
  paths: Record<string, Partial<Record<ApiRoute['method'], Operation>>>;
  components: {
    schemas: Record<string, JsonSchema>;
    securitySchemes: Record<string, unknown>;
    headers: Record<string, unknown>;
  };
};

// Response schemas that several routes share become components; everything else is inlined.
// Requests are always inlined: their input shape (defaults optional, query strings as text)
// differs from the output shape a component of the same name would have.
const SHARED_SCHEMAS = {
  AdminUser,
  ApiKeyInfo,
  Approval,
  ApprovalRequest,
  DocumentEntry,
  Fact,
  MemoryFileInfo,
  Mission,
  MissionDetail,
  RunSummary,
  Usage,
};

const SECURITY_SCHEME = 'apiKey';

// What each error code means for a caller; a code added to the contracts must be explained here.
const ERROR_MEANINGS: Record<ErrorCode, string> = {
  bad_request: 'the request breaks its schema; the message names the first problem',
  unauthorized: 'no API key, or one that is unknown or revoked',
  forbidden: 'the key is not an admin key',
  not_found: 'no such item of yours (another user’s answers the same)',
  conflict: 'the item’s state does not allow this',
  idempotency_key_reused:
    'the Idempotency-Key was used before with another body; nothing of this request was stored',
  payload_too_large: 'the body is over the limit',
  unavailable: 'a service or the database cannot be reached',
  timeout: 'a service did not answer in time',
  budget_exceeded: 'a model budget is used up; the message says which and when it resets',
  rate_limited: 'too many requests with this key; Retry-After says when to try again',
  cancelled: 'the work was cancelled',
  internal: 'an unexpected error; x-trace-id finds it in the traces and logs',
};

const SUCCESS_DESCRIPTIONS: Record<ApiRoute['status'], string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the work goes on in the background',
  204: 'Done; no body',
};

// Errors that follow from a route's shape, on top of those it lists: any request can be
// malformed (or carry a key in its URL) and any can fail unexpectedly; a body can be too large;
// a key is looked up in the database and counted by the rate limiter.
function errorCodesOf(route: ApiRoute): ErrorCode[] {
  const codes = new Set<ErrorCode>(['bad_request', ...(route.errors ?? []), 'internal']);
  if (route.body) codes.add('payload_too_large');
  if (route.auth !== 'none') {
    codes.add('unauthorized');
    codes.add('rate_limited');
    codes.add('unavailable');
  }
  if (route.auth === 'admin') codes.add('forbidden');
  return [...codes];
}

// zod puts the shared schemas in each schema's own $defs; the document keeps them once, as
// components.
function pointRefsAtComponents(node: unknown): void {
  if (Array.isArray(node)) {
    for (const item of node) pointRefsAtComponents(item);
    return;
  }
  if (typeof node !== 'object' || node === null) return;
  if ('$ref' in node && typeof node.$ref === 'string') {
    node.$ref = node.$ref.replace(/^#\/\$defs\//, '#/components/schemas/');
  }
  for (const value of Object.values(node)) pointRefsAtComponents(value);
}

function createSchemaConverter() {
  const shared = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(SHARED_SCHEMAS)) shared.add(schema, { id });
  const components: Record<string, JsonSchema> = {};

  function addComponent(id: string, schema: JsonSchema): void {
    const existing = components[id];
    if (existing && JSON.stringify(existing) !== JSON.stringify(schema)) {
      throw new Error(`two different schemas are both named ${id}`);
    }
    components[id] = schema;
  }

  function convert(schema: z.ZodType, io: 'input' | 'output'): JsonSchema {
    const { $defs, ...converted } = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      ...(io === 'output' ? { metadata: shared } : {}),
    });
    // The document is of OpenAPI 3.1's dialect, JSON Schema 2020-12, already.
    delete converted.$schema;
    for (const [id, definition] of Object.entries($defs ?? {})) {
      if (typeof definition === 'boolean') throw new Error(`schema ${id} is a boolean`);
      pointRefsAtComponents(definition);
      addComponent(id, definition);
    }
    pointRefsAtComponents(converted);
    return converted;
  }

  return { convert, components, addComponent };
}

function contentOf(content: RouteContent, convert: Convert) {
  return Object.fromEntries(
    Object.entries(content).map(([mediaType, schema]) => [mediaType, { schema: convert(schema) }]),
  );
}

function parametersOf(
  schema: z.ZodObject | undefined,
  location: Parameter['in'],
  convert: Convert,
): Parameter[] {
  if (!schema) return [];
  const converted = convert(schema);
  const required = new Set(converted.required ?? []);
  return Object.entries(converted.properties ?? {}).map(([name, property]) => {
    if (typeof property === 'boolean') throw new Error(`parameter ${name} has no schema`);
    return {
      name,
      in: location,
      required: location === 'path' || required.has(name),
      schema: property,
    };
  });
}

function checkPathParameters(route: ApiRoute, parameters: Parameter[]): void {
  const inPath = [...route.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
  const described = parameters
    .filter((p) => p.in === 'path')
    .map((p) => p.name)
    .sort();
  if (inPath.join() !== described.join()) {
    throw new Error(
      `${route.method.toUpperCase()} ${route.path}: path has {${inPath.join('}, {')}} but params describe ${described.join(', ') || 'none'}`,
    );
  }
}

function responsesOf(route: ApiRoute, toResponse: Convert): Record<string, ResponseObject> {
  const ids = {
    'x-request-id': { $ref: '#/components/headers/RequestId' },
    'x-trace-id': { $ref: '#/components/headers/TraceId' },
  };
  const responses: Record<string, ResponseObject> = {
    [route.status]: {
      description: SUCCESS_DESCRIPTIONS[route.status],
      headers: ids,
      ...(route.response ? { content: contentOf(route.response, toResponse) } : {}),
    },
  };
  const codesByStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(route)) {
    const status = HTTP_STATUS_BY_CODE[code];
    codesByStatus.set(status, [...(codesByStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of [...codesByStatus].sort(([a], [b]) => a - b)) {
    responses[status] = {
      description: codes.map((code) => `\`${code}\`: ${ERROR_MEANINGS[code]}`).join('; '),
      headers: codes.includes('rate_limited')
        ? { ...ids, 'retry-after': { $ref: '#/components/headers/RetryAfter' } }
        : ids,
      content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } },
    };
  }
  return responses;
}

const SECURITY: Record<ApiRoute['auth'], Record<string, string[]>[]> = {
  user: [{ [SECURITY_SCHEME]: [] }],
  // OpenAPI 3.1 lets a non-OAuth requirement name roles: here, the key's scope.
  admin: [{ [SECURITY_SCHEME]: ['admin'] }],
  none: [],
};

type Convert = (schema: z.ZodType) => JsonSchema;

function operationOf(route: ApiRoute, toInput: Convert, toOutput: Convert): Operation {
  const parameters = [
    ...parametersOf(route.params, 'path', toInput),
    ...parametersOf(route.query, 'query', toInput),
    ...parametersOf(route.headers, 'header', toInput),
  ];
  checkPathParameters(route, parameters);
  return {
    tags: [route.tag],
    summary: route.summary,
    ...(route.description ? { description: route.description } : {}),
    security: SECURITY[route.auth],
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(route.body
      ? {
          requestBody: { required: !route.isBodyOptional, content: contentOf(route.body, toInput) },
        }
      : {}),
    responses: responsesOf(route, route.isResponseInputShaped ? toInput : toOutput),
  };
}

export function buildOpenApiDocument(routes: ApiRoute[]): OpenApiDocument {
  const { convert, components, addComponent } = createSchemaConverter();
  const toInput: Convert = (schema) => convert(schema, 'input');
  const toOutput: Convert = (schema) => convert(schema, 'output');
  addComponent('ErrorBody', toOutput(ErrorBody));

  const paths: OpenApiDocument['paths'] = {};
  for (const route of routes) {
    const name = `${route.method.toUpperCase()} ${route.path}`;
    const operations = paths[route.path] ?? {};
    if (operations[route.method]) throw new Error(`${name} is in the table twice`);
    try {
      operations[route.method] = operationOf(route, toInput, toOutput);
    } catch (error) {
      // zod's own message does not say which route's schema it could not express.
      throw new Error(`${name}: ${error instanceof Error ? error.message : error}`, {
        cause: error,
      });
    }
    paths[route.path] = operations;
  }

  return {
    openapi: '3.1.1',
    info: {
      title: 'Jarvis API',
      version: '1',
      description:
        'The HTTP API of Jarvis, generated from the zod contracts the gateway validates with. ' +
        'Every error answers `{"error": {"code", "message"}}`.',
    },
    tags: [...new Set(routes.map((route) => route.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: components,
      securitySchemes: {
        [SECURITY_SCHEME]: {
          type: 'http',
          scheme: 'bearer',
          description:
            'An API key, as `Authorization: Bearer <key>`. Keys are accepted in this header ' +
            'only: a key in the URL is refused.',
        },
      },
      headers: {
        RequestId: {
          description: 'A new id for every request: quote it when reporting a problem.',
          schema: { type: 'string', format: 'uuid' },
        },
        TraceId: {
          description: 'The trace of everything this request caused, in the traces and logs.',
          schema: { type: 'string', pattern: '^[0-9a-f]{32}$' },
        },
        RetryAfter: {
          description: 'Seconds until the rate limit lets the key in again.',
          schema: { type: 'integer', minimum: 1 },
        },
      },
    },
  };
}
