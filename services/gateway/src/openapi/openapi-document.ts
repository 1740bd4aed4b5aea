import {
  AdminUser,
  ApiKeyInfo,
  Approval,
  ApprovalRequest,
  DocumentEntry,
  type Endpoint,
  type EndpointContent,
  ErrorBody,
  type ErrorCode,
  endpointName,
  Fact,
  HTTP_STATUS_BY_CODE,
  MemoryFileInfo,
  Mission,
  MissionDetail,
  RunSummary,
  Usage,
} from '@jarvis/contracts';
import type { z } from 'zod';
import {
  createDocument,
  createSchema,
  type oas31,
  type ZodOpenApiContentObject,
  type ZodOpenApiOperationObject,
  type ZodOpenApiPathsObject,
  type ZodOpenApiResponseObject,
  type ZodOpenApiResponsesObject,
} from 'zod-openapi';

export type OpenApiDocument = oas31.OpenAPIObject;

// Answer schemas that several endpoints share become components; everything else is inlined.
const SHARED_SCHEMAS = {
  AdminUser,
  ApiKeyInfo,
  Approval,
  ApprovalRequest,
  DocumentEntry,
  ErrorBody,
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

const SUCCESS_DESCRIPTIONS: Record<Endpoint['status'], string> = {
  200: 'OK',
  201: 'Created',
  202: 'Accepted: the work goes on in the background',
  204: 'Done; no body',
};

const SECURITY: Record<Endpoint['auth'], oas31.SecurityRequirementObject[]> = {
  user: [{ [SECURITY_SCHEME]: [] }],
  // OpenAPI 3.1 lets a non-OAuth requirement name roles: here, the key's scope.
  admin: [{ [SECURITY_SCHEME]: ['admin'] }],
  none: [],
};

const IDS = {
  'x-request-id': { $ref: '#/components/headers/RequestId' },
  'x-trace-id': { $ref: '#/components/headers/TraceId' },
};

// Errors that follow from an endpoint's shape, on top of those it lists: any request can be
// malformed (or carry a key in its URL) and any can fail unexpectedly; a body can be too large;
// a key is looked up in the database and counted by the rate limiter.
function errorCodesOf(endpoint: Endpoint): ErrorCode[] {
  const codes = new Set<ErrorCode>(['bad_request', ...(endpoint.errors ?? []), 'internal']);
  if (endpoint.body) codes.add('payload_too_large');
  if (endpoint.auth !== 'none') {
    codes.add('unauthorized');
    codes.add('rate_limited');
    codes.add('unavailable');
  }
  if (endpoint.auth === 'admin') codes.add('forbidden');
  return [...codes];
}

// A file format that reads back (the memory export) is described by what it accepts: its
// transforms have no JSON Schema output, and zod-openapi describes every answer by its output.
function inputSchemaOf(schema: z.ZodType) {
  return createSchema(schema, { io: 'input' }).schema;
}

function contentOf(content: EndpointContent, isInputShaped = false): ZodOpenApiContentObject {
  return Object.fromEntries(
    Object.entries(content).map(([mediaType, schema]) => [
      mediaType,
      { schema: isInputShaped ? inputSchemaOf(schema) : schema },
    ]),
  );
}

function responsesOf(endpoint: Endpoint): ZodOpenApiResponsesObject {
  const success: ZodOpenApiResponseObject = {
    description: SUCCESS_DESCRIPTIONS[endpoint.status],
    headers: IDS,
    ...(endpoint.response
      ? { content: contentOf(endpoint.response, endpoint.isResponseInputShaped) }
      : {}),
  };
  const codesByStatus = new Map<number, ErrorCode[]>();
  for (const code of errorCodesOf(endpoint)) {
    const status = HTTP_STATUS_BY_CODE[code];
    codesByStatus.set(status, [...(codesByStatus.get(status) ?? []), code]);
  }
  const errors = [...codesByStatus]
    .sort(([a], [b]) => a - b)
    .map(([status, codes]): [string, ZodOpenApiResponseObject] => [
      `${status}`,
      {
        description: codes.map((code) => `\`${code}\`: ${ERROR_MEANINGS[code]}`).join('; '),
        headers: codes.includes('rate_limited')
          ? { ...IDS, 'retry-after': { $ref: '#/components/headers/RetryAfter' } }
          : IDS,
        content: { 'application/json': { schema: ErrorBody } },
      },
    ]);
  return Object.fromEntries([[`${endpoint.status}`, success], ...errors]);
}

function checkPathParameters(endpoint: Endpoint): void {
  const inPath = [...endpoint.path.matchAll(/\{(\w+)\}/g)].map((match) => match[1]).sort();
  const described = Object.keys(endpoint.params?.shape ?? {}).sort();
  if (inPath.join() !== described.join()) {
    throw new Error(
      `path has {${inPath.join('}, {')}} but params describe ${described.join(', ') || 'none'}`,
    );
  }
}

function operationOf(endpoint: Endpoint): ZodOpenApiOperationObject {
  checkPathParameters(endpoint);
  const requestParams = {
    ...(endpoint.params ? { path: endpoint.params } : {}),
    ...(endpoint.query ? { query: endpoint.query } : {}),
    ...(endpoint.headers ? { header: endpoint.headers } : {}),
  };
  return {
    tags: [endpoint.tag],
    summary: endpoint.summary,
    ...(endpoint.description ? { description: endpoint.description } : {}),
    security: SECURITY[endpoint.auth],
    ...(Object.keys(requestParams).length > 0 ? { requestParams } : {}),
    ...(endpoint.body
      ? { requestBody: { required: !endpoint.isBodyOptional, content: contentOf(endpoint.body) } }
      : {}),
    responses: responsesOf(endpoint),
  };
}

type Ref = { $ref: string };

function isRef(node: object): node is Ref {
  return '$ref' in node && typeof node.$ref === 'string';
}

// Every reference object in the document, to read or repoint.
function refsIn(node: unknown): Ref[] {
  if (typeof node !== 'object' || node === null) return [];
  return [...(isRef(node) ? [node] : []), ...Object.values(node).flatMap(refsIn)];
}

// zod-openapi renders every registered component for requests as well as for answers, even
// where no request uses it; a component inside another (Usage in Mission) then comes out
// twice: its request form under its name, and its answer form as `<name>Output`. No request
// refers to a shared component, so the answer form takes the name back.
function keepAnswerForms(document: OpenApiDocument): OpenApiDocument {
  const schemas = document.components?.schemas ?? {};
  const refs = refsIn(document);
  for (const name of Object.keys(SHARED_SCHEMAS)) {
    const answerForm = schemas[`${name}Output`];
    if (!answerForm) continue;
    const requestRef = `#/components/schemas/${name}`;
    const answerRef = `#/components/schemas/${name}Output`;
    if (refs.some((ref) => ref.$ref === requestRef)) {
      throw new Error(`a request refers to the shared component ${name}: give it its own name`);
    }
    schemas[name] = answerForm;
    delete schemas[`${name}Output`];
    for (const ref of refs) if (ref.$ref === answerRef) ref.$ref = requestRef;
  }
  return document;
}

export function buildOpenApiDocument(endpoints: Endpoint[]): OpenApiDocument {
  const paths: ZodOpenApiPathsObject = {};
  for (const endpoint of endpoints) {
    const operations = paths[endpoint.path] ?? {};
    if (operations[endpoint.method]) throw new Error(`${endpointName(endpoint)} is declared twice`);
    try {
      operations[endpoint.method] = operationOf(endpoint);
    } catch (error) {
      throw new Error(
        `${endpointName(endpoint)}: ${error instanceof Error ? error.message : error}`,
        {
          cause: error,
        },
      );
    }
    paths[endpoint.path] = operations;
  }

  const document = createDocument({
    openapi: '3.1.1',
    info: {
      title: 'Jarvis API',
      version: '1',
      description:
        'The HTTP API of Jarvis, generated from the zod contracts the gateway validates with. ' +
        'Every error answers `{"error": {"code", "message"}}`.',
    },
    tags: [...new Set(endpoints.map((endpoint) => endpoint.tag))].map((name) => ({ name })),
    paths,
    components: {
      schemas: SHARED_SCHEMAS,
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
  });
  return keepAnswerForms(document);
}
