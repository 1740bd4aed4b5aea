import { defineRpc, ENDPOINTS, type Endpoint, ERROR_CODES, ErrorBody } from '@jarvis/contracts';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { buildOpenApiDocument } from './openapi-document';

// The parts of the document these tests read, so that they are typed.
const Content = z.record(z.string(), z.looseObject({ schema: z.unknown() }));
const Operation = z.looseObject({
  security: z.array(z.record(z.string(), z.array(z.string()))),
  parameters: z
    .array(z.looseObject({ name: z.string(), in: z.string(), required: z.boolean().optional() }))
    .optional(),
  requestBody: z.looseObject({ content: Content }).optional(),
  responses: z.record(
    z.string(),
    z.looseObject({ headers: z.record(z.string(), z.unknown()), content: Content.optional() }),
  ),
});
const OpenApiDocument = z.looseObject({
  paths: z.record(z.string(), z.record(z.string(), Operation)),
  components: z.looseObject({
    schemas: z.record(z.string(), z.unknown()),
    securitySchemes: z.record(z.string(), z.unknown()),
  }),
});

function build(endpoints: Endpoint[]) {
  return OpenApiDocument.parse(buildOpenApiDocument(endpoints));
}

const document = build(ENDPOINTS);
const operations = Object.entries(document.paths).flatMap(([path, byMethod]) =>
  Object.entries(byMethod).map(([method, operation]) => ({
    name: `${method.toUpperCase()} ${path}`,
    operation,
  })),
);

// Every value under a key named `key`, with where it was found.
function collect(node: unknown, key: string, where = '#'): { where: string; value: unknown }[] {
  if (typeof node !== 'object' || node === null) return [];
  return Object.entries(node).flatMap(([name, value]) => [
    ...(name === key ? [{ where, value }] : []),
    ...collect(value, key, `${where}/${name}`),
  ]);
}

// A `#/a/b` pointer into the document, or undefined where nothing is.
function resolve(pointer: string): unknown {
  let node: unknown = document;
  for (const part of pointer.slice(2).split('/')) {
    if (typeof node !== 'object' || node === null) return undefined;
    node = Object.entries(node).find(([name]) => name === part)?.[1];
  }
  return node;
}

describe('the OpenAPI document', () => {
  it('is valid OpenAPI 3.1', async () => {
    const result = await new Validator().validate(document);

    expect(result.errors).toBeUndefined();
    expect(result.valid).toBe(true);
  });

  it('holds only valid JSON Schema 2020-12', () => {
    const ajv = new Ajv2020();
    const schemas = [
      ...Object.entries(document.components.schemas).map(([id, value]) => ({ where: id, value })),
      ...collect(document.paths, 'schema'),
    ];

    expect(schemas.length).toBeGreaterThan(100);
    for (const { where, value } of schemas) {
      if (typeof value !== 'object' || value === null) throw new Error(`${where}: not a schema`);
      expect(ajv.validateSchema(value), `${where}: ${ajv.errorsText()}`).toBe(true);
    }
  });

  it('resolves every $ref', () => {
    const refs = collect(document, '$ref');

    expect(refs.length).toBeGreaterThan(100);
    for (const { where, value } of refs) {
      expect(typeof value === 'string' && resolve(value), `${where}: ${value}`).toBeTruthy();
    }
  });

  it('describes the structured error body with every error code', () => {
    expect(document.components.schemas.ErrorBody).toMatchObject({
      type: 'object',
      required: ['error'],
      properties: {
        error: {
          required: ['code', 'message'],
          properties: { code: { enum: [...ERROR_CODES] }, message: { type: 'string' } },
        },
      },
    });
    expect(ErrorBody.safeParse({ error: { code: 'not_found', message: 'x' } }).success).toBe(true);
  });

  it('names x-request-id and x-trace-id on every answer, and every error body', () => {
    for (const { name, operation } of operations) {
      for (const [status, response] of Object.entries(operation.responses)) {
        expect(response.headers, `${name} ${status}`).toMatchObject({
          'x-request-id': { $ref: '#/components/headers/RequestId' },
          'x-trace-id': { $ref: '#/components/headers/TraceId' },
        });
        if (Number(status) < 400) continue;
        expect(response.content, `${name} ${status}`).toEqual({
          'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } },
        });
      }
    }
  });

  it('asks for a key, in the Authorization header only, on every route but the docs', () => {
    expect(document.components.securitySchemes).toEqual({
      apiKey: expect.objectContaining({ type: 'http', scheme: 'bearer' }),
    });
    const open = operations.filter(({ operation }) => operation.security.length === 0);

    expect(open.map(({ name }) => name)).toEqual([
      'GET /v1/openapi.json',
      'GET /v1/docs',
      'GET /v1/docs/assets/{file}',
    ]);
    for (const { name, operation } of operations) {
      if (operation.security.length === 0) continue;
      expect(Object.keys(operation.responses), name).toEqual(
        expect.arrayContaining(['401', '429', '503']),
      );
    }
    expect(document.paths['/v1/admin/users']?.get?.security).toEqual([{ apiKey: ['admin'] }]);
    expect(document.paths['/v1/admin/users']?.get?.responses['403']).toBeDefined();
  });

  it('describes requests by their input and answers by their output', () => {
    const list = document.paths['/v1/memory/facts']?.get;
    const remember = document.paths['/v1/memory/facts']?.post;

    // Query strings are text that the schema coerces. Not required: OpenAPI's default.
    const includeInvalid = list?.parameters?.find(({ name }) => name === 'includeInvalid');
    expect(includeInvalid).toMatchObject({ in: 'query' });
    expect(includeInvalid?.required ?? false).toBe(false);
    expect(remember?.requestBody?.content['application/json']?.schema).toMatchObject({
      required: ['content'],
      additionalProperties: false,
    });
    expect(remember?.responses['201']?.content?.['application/json']?.schema).toMatchObject({
      properties: { fact: { $ref: '#/components/schemas/Fact' } },
    });
  });

  it('describes the document upload as a form beside the JSON body, its file as binary', () => {
    const content = document.paths['/v1/memory/documents']?.post?.requestBody?.content ?? {};

    expect(Object.keys(content)).toEqual(['application/json', 'multipart/form-data']);
    expect(content['multipart/form-data']?.schema).toMatchObject({
      properties: { file: { type: 'string', format: 'binary' }, title: { type: 'string' } },
      required: ['file'],
      additionalProperties: false,
    });
  });
});

describe('buildOpenApiDocument', () => {
  const route: Endpoint = {
    forward: { rpc: defineRpc('things.get', z.object({}), z.object({ name: z.string() })) },
    method: 'get',
    path: '/v1/things/{id}',
    summary: 'A thing',
    tag: 'things',
    auth: 'user',
    params: z.object({ id: z.uuid() }),
    status: 200,
    response: { 'application/json': z.object({ name: z.string() }) },
  };

  it('turns path parameters into required parameters', () => {
    const built = build([route]);

    expect(built.paths['/v1/things/{id}']?.get?.parameters).toEqual([
      {
        name: 'id',
        in: 'path',
        required: true,
        schema: expect.objectContaining({ format: 'uuid' }),
      },
    ]);
  });

  it('refuses a route whose path and params disagree', () => {
    expect(() => build([{ ...route, params: z.object({ thingId: z.uuid() }) }])).toThrow(
      'GET /v1/things/{id}: path has {id} but params describe thingId',
    );
  });

  it('refuses a route listed twice', () => {
    expect(() => build([route, route])).toThrow('GET /v1/things/{id} is declared twice');
  });

  it('names the route whose answer JSON Schema cannot express', () => {
    const transformed = z.object({ name: z.string().transform((name) => name.length) });

    expect(() => build([{ ...route, response: { 'application/json': transformed } }])).toThrow(
      /^Zod transform found at .*\/v1\/things\/\{id\} > get > responses > 200 /,
    );
  });
});
