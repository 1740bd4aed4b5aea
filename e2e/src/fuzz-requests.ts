import { gzipSync } from 'node:zlib';
import type { Endpoint } from '@jarvis/contracts';
import fc from 'fast-check';
import { z } from 'zod';

// Requests for any endpoint declared in @jarvis/contracts, made from its zod schemas: mostly the
// right shape with wrong pieces in it, and every other way a client can get a request wrong.

type JsonSchema = z.core.JSONSchema.BaseSchema;
type SchemaNode = z.core.JSONSchema._JSONSchema;

export type FuzzRequest = {
  method: string;
  // Path and query, already encoded (or deliberately not).
  path: string;
  headers: Record<string, string>;
  body?: string | Uint8Array;
  // Which kind of input this is, for the failure message.
  variant: string;
  // How fast-check prints it in a counterexample: cut short, not megabytes of body.
  [fc.toStringMethod]: () => string;
};

const shorten = (text: string) => (text.length > 300 ? `${text.slice(0, 300)}…` : text);

export function describeRequest(request: Omit<FuzzRequest, typeof fc.toStringMethod>): string {
  const body =
    typeof request.body === 'string' ? shorten(request.body) : `${request.body?.length} bytes`;
  const headers = shorten(JSON.stringify(request.headers));
  return `${request.method} ${shorten(request.path)} [${request.variant}] ${headers} ${body}`;
}

export type FuzzContext = {
  // The ids a request names, in its path, query and body: random ones, or another user's.
  uuid: fc.Arbitrary<string>;
  // The key each route is called with by default: a user's for user routes, the admin's for
  // admin routes (a user's key would stop every admin request at 403, before any parsing).
  userKey: string;
  adminKey: string;
  bodyLimitBytes: number;
  // Only well-formed requests that the schemas may accept: no wrong types, no extra keys, no
  // broken bodies or headers. For reaching the handlers with another user's ids.
  isStrict: boolean;
};

const NASTY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\u0007\u001b[2J',
  'null',
  'undefined',
  'true',
  '0',
  '-1',
  '1e400',
  'NaN',
  'Infinity',
  '99999999999999999999999',
  "'; DROP TABLE memory.facts; --",
  '%',
  '%00',
  '%s%s%n',
  '../../../etc/passwd',
  '..',
  '.',
  '/',
  '//',
  '\\',
  'a/../b',
  '<script>alert(1)</script>',
  '\u202e\u0645\u0631\u062d\u0628\u0627',
  '\ud800',
  '\udfff\ud800',
  '😀👍🏽',
  'e\u0301\u0301\u0301',
  '\r\n\r\n',
  '$1 $& $`',
  '{{7*7}}',
  '__proto__',
  'constructor',
  '(a+)+$',
  '(((((a*)*)*)*)*)b',
  '[[:alpha:]',
  '\\1(a)',
  '[',
  '*',
  '?',
  '(?i)x',
  '2024-02-30',
  '2024-02-30T12:00:00Z',
  '0000-01-01T00:00:00Z',
  '9999-12-31T23:59:59.999999999+14:00',
  '+275760-09-13T00:00:00.000Z',
  '1970-01-01T00:00:00-99:99',
  'Europe/Oslo',
  'Mars/Olympus',
  '00000000-0000-0000-0000-000000000000',
  'ffffffff-ffff-ffff-ffff-ffffffffffff',
  '6ba7b810-9dad-11d1-80b4-00c04fd430c8',
  'not-a-uuid',
];

// Numbers around the edges of every integer type the services store them in.
const EDGE_NUMBERS = [
  0,
  -0,
  -1,
  1,
  1.5,
  2 ** 15,
  2 ** 31 - 1,
  2 ** 31,
  -(2 ** 31) - 1,
  2 ** 32,
  2 ** 53 - 1,
  2 ** 53 + 2,
  -(2 ** 53),
  1e21,
  1e308,
  5e-324,
];

// Keys a client might slip in: prototype pollution, and fields the server sets itself.
const EXTRA_KEYS = ['__proto__', 'constructor', 'prototype', 'userId', 'id', 'user_id', 'scope'];

// Path segments sent as they are: bad percent-encoding, encoded separators, dot segments.
const RAW_SEGMENTS = ['%', '%E0%A4%A', '%ZZ', '%00', '%2F', '%2e%2e', '..', '.', '%20', ';', '*'];

// Content types a JSON route must refuse, or read as what they are.
const WRONG_CONTENT_TYPES = [
  'text/plain',
  'text/html',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=fuzz',
  'application/xml',
  'application/octet-stream',
  'application/x-ndjson',
  'application/json; charset=utf-16',
  'application/json; charset=iso-8859-1',
  'application/json; charset=utf-99',
  'APPLICATION/JSON',
  'application/vnd.api+json',
  'application/json, text/plain',
  ';;;',
];

const CONTENT_ENCODINGS = ['gzip', 'deflate', 'br', 'identity', 'x-bogus', 'gzip, gzip'];

const ACCEPTS = ['text/event-stream', 'application/json', '*/*', 'application/xml', 'text/*;q=x'];

const nastyString = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom(...NASTY_STRINGS) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 30 }) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 30 }) },
);

const edgeNumber = fc.oneof(fc.constantFrom(...EDGE_NUMBERS), fc.integer(), fc.double());

// Any JSON value: what a client sends when it gets the type of a field wrong.
const wrongValue: fc.Arbitrary<unknown> = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  nastyString,
  edgeNumber,
  fc.constantFrom(null, true, false, [], {}, [[[[]]]], { '': null }),
);

// What a header value can carry at all: fetch refuses control characters and anything past
// Latin-1 before sending.
function toHeaderValue(value: unknown): string {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return (text ?? '').replace(/[^ -~\u00a0-\u00ff]/g, '').trim();
}

function asObject(node: SchemaNode | undefined): JsonSchema {
  return typeof node === 'object' ? node : {};
}

// JSON Schema, as zod writes it for what a route accepts; refinements are zod's alone, so a
// "valid" value may still be refused, which is fine.
function convertSchema(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
}

type SchemaWalk = {
  root: JsonSchema;
  context: FuzzContext;
  depth: number;
  // Inside a value already past its limit: nothing more is oversized, or one request could
  // grow to gigabytes.
  isInsideOversized?: boolean;
};

function resolveRef(ref: string, root: JsonSchema): JsonSchema {
  const name = ref.replace(/^#\/\$defs\//, '');
  return root.$defs?.[name] ?? {};
}

// A value for the schema: in strict mode one it describes; otherwise often one it describes
// with wrong or oversized pieces in it.
function valueFor(node: SchemaNode | undefined, walk: SchemaWalk): fc.Arbitrary<unknown> {
  const conforming = conformingValue(asObject(node), { ...walk, depth: walk.depth + 1 });
  if (walk.context.isStrict) return conforming;
  return fc.oneof({ weight: 6, arbitrary: conforming }, { weight: 1, arbitrary: wrongValue });
}

// Often wholly valid, else with wrong pieces: input wrong in every field is refused at the first,
// and never reaches the code behind it.
function mostlyValid(node: SchemaNode | undefined, walk: SchemaWalk): fc.Arbitrary<unknown> {
  if (walk.context.isStrict) return valueFor(node, walk);
  const valid = valueFor(node, { ...walk, context: { ...walk.context, isStrict: true } });
  return fc.oneof({ weight: 2, arbitrary: valid }, { weight: 3, arbitrary: valueFor(node, walk) });
}

function conformingValue(schema: JsonSchema, walk: SchemaWalk): fc.Arbitrary<unknown> {
  if (walk.depth > 6) return fc.constant(null);
  if (schema.$ref) return conformingValue(resolveRef(schema.$ref, walk.root), walk);
  if (schema.const !== undefined) return fc.constant(schema.const);
  if (schema.enum) return fc.constantFrom(...schema.enum);
  const branches = schema.anyOf ?? schema.oneOf;
  if (branches && branches.length > 0) {
    return fc.oneof(...branches.map((branch) => conformingValue(branch, walk)));
  }
  const [first] = schema.allOf ?? [];
  if (first) return conformingValue(first, walk);
  switch (schema.type) {
    case 'string':
      return stringFor(schema, walk);
    case 'number':
    case 'integer':
      return numberFor(schema, walk.context);
    case 'boolean':
      return fc.boolean();
    case 'null':
      return fc.constant(null);
    case 'array':
      return arrayFor(schema, walk);
    case 'object':
      return objectFor(schema, walk);
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

// fast-check writes strings for most regular expressions, not for lookarounds or backreferences.
function isSupportedPattern(pattern: string): boolean {
  if (/\(\?[=!<]|\\\d/.test(pattern)) return false;
  try {
    fc.sample(fc.stringMatching(new RegExp(pattern)), 1);
    return true;
  } catch {
    return false;
  }
}

const WORDS = ['notes', 'plan', 'Lisbon', 'dentist', 'a', 'x y', 'résumé', 'café', '日本語'];

function stringFor(schema: JsonSchema, walk: SchemaWalk): fc.Arbitrary<string> {
  const { context } = walk;
  const min = schema.minLength ?? 0;
  const max = schema.maxLength;
  const options: fc.Arbitrary<string>[] = [];
  if (schema.format === 'uuid') options.push(context.uuid);
  else if (schema.format === 'date-time') {
    options.push(
      fc
        .date({ min: new Date('1900-01-01'), max: new Date('2200-01-01'), noInvalidDate: true })
        .map((date) => date.toISOString()),
    );
  } else if (schema.format === 'date') {
    options.push(
      fc
        .date({ min: new Date('1900-01-01'), max: new Date('2200-01-01'), noInvalidDate: true })
        .map((date) => date.toISOString().slice(0, 10)),
    );
  } else if (schema.pattern && isSupportedPattern(schema.pattern)) {
    options.push(fc.stringMatching(new RegExp(schema.pattern)));
  } else {
    const shortMax = Math.max(min, Math.min(max ?? 40, 40));
    options.push(
      fc.string({ minLength: min, maxLength: shortMax }),
      fc
        .array(fc.constantFrom(...WORDS), { minLength: 1, maxLength: 6 })
        .map((words) => words.join(' ').slice(0, max)),
      fc.string({ unit: 'grapheme', minLength: min, maxLength: shortMax }),
    );
  }
  if (context.isStrict) return fc.oneof(...options);
  // A valid string with a NUL in it: Postgres refuses it in text and jsonb alike.
  const withNul = fc.oneof(...options).map((text) => `${text}\u0000`);
  if (walk.isInsideOversized) {
    return fc.oneof({ weight: 4, arbitrary: fc.oneof(...options) }, nastyString, withNul);
  }
  // Just past the limit (or past any body limit when there is none), and the nasty ones.
  // (A body past the body limit is a request variant of its own; query strings past Node's
  // 16 KB of headers come from the 'é's.)
  const beyond = max === undefined ? 10_000 : max + 1;
  return fc.oneof(
    { weight: 8, arbitrary: fc.oneof(...options) },
    { weight: 2, arbitrary: nastyString },
    { weight: 1, arbitrary: withNul },
    { weight: 1, arbitrary: fc.constant('x'.repeat(beyond)) },
    { weight: 1, arbitrary: fc.constant('é'.repeat(Math.ceil(beyond / 2))) },
  );
}

function numberFor(schema: JsonSchema, context: FuzzContext): fc.Arbitrary<number> {
  const low = typeof schema.exclusiveMinimum === 'number' ? schema.exclusiveMinimum + 1 : undefined;
  const high =
    typeof schema.exclusiveMaximum === 'number' ? schema.exclusiveMaximum - 1 : undefined;
  const min = Math.max(schema.minimum ?? low ?? -1_000, -(2 ** 31));
  const max = Math.min(schema.maximum ?? high ?? Math.max(min + 1_000, 1_000), 2 ** 31 - 1);
  const inRange =
    schema.type === 'integer' ? fc.integer({ min, max }) : fc.double({ min, max, noNaN: true });
  if (context.isStrict) return inRange;
  return fc.oneof(
    { weight: 4, arbitrary: inRange },
    { weight: 2, arbitrary: fc.constantFrom(min, max, min - 1, max + 1) },
    { weight: 2, arbitrary: edgeNumber },
  );
}

function arrayFor(schema: JsonSchema, walk: SchemaWalk): fc.Arbitrary<unknown[]> {
  const items = Array.isArray(schema.items) ? undefined : schema.items;
  if (schema.prefixItems) {
    return fc.tuple(...schema.prefixItems.map((item) => valueFor(item, walk)));
  }
  const item = valueFor(items, walk);
  const min = schema.minItems ?? 0;
  const inRange = fc.array(item, {
    minLength: min,
    maxLength: Math.max(min, Math.min(schema.maxItems ?? 3, 3)),
  });
  if (walk.context.isStrict) return inRange;
  if (walk.isInsideOversized) return inRange;
  // One small item repeated past the limit: as long as a generated list, at a fraction of the
  // cost.
  const beyond = Math.min((schema.maxItems ?? 10_000) + 1, 10_001);
  const smallItem = valueFor(items, { ...walk, isInsideOversized: true });
  return fc.oneof(
    { weight: 8, arbitrary: inRange },
    { weight: 1, arbitrary: smallItem.map((value) => Array.from({ length: beyond }, () => value)) },
  );
}

function objectFor(schema: JsonSchema, walk: SchemaWalk): fc.Arbitrary<Record<string, unknown>> {
  const properties = schema.properties ?? {};
  const model = Object.fromEntries(
    Object.entries(properties).map(([key, node]) => [key, valueFor(node, walk)]),
  );
  const required = (schema.required ?? []).filter((key) => key in properties);
  const additional = schema.additionalProperties;
  const entries =
    typeof additional === 'object'
      ? fc.dictionary(fc.string({ maxLength: 12 }), valueFor(additional, walk), { maxKeys: 3 })
      : fc.constant({});
  const shaped = fc
    .tuple(fc.record(model, { requiredKeys: required }), entries)
    .map(([known, more]) => ({ ...more, ...known }));
  if (walk.context.isStrict) return shaped;
  const extraKey = fc.oneof(fc.constantFrom(...EXTRA_KEYS), fc.string({ maxLength: 12 }));
  const extras = fc.dictionary(extraKey, fc.oneof(walk.context.uuid, wrongValue), {
    minKeys: 1,
    maxKeys: 3,
  });
  return fc.oneof(
    { weight: 6, arbitrary: shaped },
    // Required fields left out.
    { weight: 1, arbitrary: fc.record(model, { requiredKeys: [] }) },
    {
      weight: 2,
      arbitrary: fc.tuple(shaped, extras).map(([known, more]) => ({ ...known, ...more })),
    },
  );
}

// A query or header value as text: what a client would put there for a value of that type.
function asText(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value === null || value === undefined) return '';
  return typeof value === 'object' ? JSON.stringify(value) : String(value);
}

function queryFor(route: Endpoint, context: FuzzContext): fc.Arbitrary<string> {
  const schema: JsonSchema = route.query
    ? convertSchema(route.query)
    : { type: 'object', properties: {} };
  const walk: SchemaWalk = { root: schema, context, depth: 0 };
  const asFields = (value: unknown): Record<string, string[]> =>
    Object.fromEntries(
      Object.entries(typeof value === 'object' && value !== null ? value : {}).map(
        ([key, field]) => [key, [asText(field)]],
      ),
    );
  // Some keys given twice (express then hands the route an array for them).
  const known = context.isStrict
    ? valueFor(schema, walk).map(asFields)
    : fc
        .tuple(
          mostlyValid(schema, walk).map(asFields),
          fc.oneof(
            { weight: 3, arbitrary: fc.constant([]) },
            fc.subarray(Object.keys(schema.properties ?? {})),
          ),
          nastyString,
        )
        .map(([fields, twice, other]) => {
          for (const key of twice) fields[key] = [...(fields[key] ?? []), other];
          return fields;
        });
  const encode = (fields: Record<string, string[] | undefined>) => {
    const search = new URLSearchParams();
    for (const [key, values] of Object.entries(fields)) {
      for (const value of values ?? []) search.append(key, value);
    }
    const text = search.toString();
    return text ? `?${text}` : '';
  };
  if (context.isStrict) return known.map(encode);
  const extra = fc.dictionary(
    fc.oneof(fc.constantFrom(...EXTRA_KEYS, 'limit', 'a[b]', 'a[]', 'api_key'), nastyString),
    fc.array(fc.oneof(nastyString, context.uuid), { minLength: 1, maxLength: 3 }),
    { minKeys: 1, maxKeys: 4 },
  );
  return fc.oneof(
    { weight: 6, arbitrary: known.map(encode) },
    {
      weight: 2,
      arbitrary: fc.tuple(known, extra).map(([fields, more]) => encode({ ...more, ...fields })),
    },
    // Broken escapes and separators, sent as they are.
    {
      weight: 1,
      arbitrary: fc.constantFrom('?%', '?a=%E0%A4%A', '?&&&=&==', '?limit=%00', '?;x=1', '?#'),
    },
    { weight: 1, arbitrary: fc.constant(`?${'a=1&'.repeat(2_000)}`) },
  );
}

// Lone surrogates have no UTF-8: encodeURIComponent throws on them, where a browser sends U+FFFD.
function encodeSegment(text: string): string {
  return encodeURIComponent(Buffer.from(text).toString());
}

function paramFor(node: SchemaNode | undefined, walk: SchemaWalk): fc.Arbitrary<string> {
  const valid = conformingValue(asObject(node), walk).map((value) => encodeSegment(asText(value)));
  if (walk.context.isStrict) return valid;
  return fc.oneof(
    { weight: 4, arbitrary: valid },
    { weight: 2, arbitrary: nastyString.map(encodeSegment) },
    { weight: 2, arbitrary: fc.constantFrom(...RAW_SEGMENTS) },
    { weight: 1, arbitrary: fc.constant('a'.repeat(4_000)) },
  );
}

function pathFor(route: Endpoint, context: FuzzContext): fc.Arbitrary<string> {
  const schema = route.params ? convertSchema(route.params) : {};
  const walk: SchemaWalk = { root: schema, context, depth: 0 };
  const parts = route.path.split(/(\{\w+\})/);
  return fc
    .tuple(
      ...parts.map((part) => {
        const name = /^\{(\w+)\}$/.exec(part)?.[1];
        return name === undefined ? fc.constant(part) : paramFor(schema.properties?.[name], walk);
      }),
    )
    .map((segments) => segments.join(''));
}

type Body = { body?: string | Uint8Array; contentType?: string; encoding?: string; kind: string };

// What replaces one field of a shaped body: nested deep (at, below and far past the gateway's
// 64 levels), long, or wide.
type Filling = { kind: 'deep object' | 'deep array' | 'long string' | 'wide array'; size: number };

function fillingText({ kind, size }: Filling): string {
  if (kind === 'deep object') return `${'{"a":'.repeat(size)}1${'}'.repeat(size)}`;
  if (kind === 'deep array') return `${'['.repeat(size)}${']'.repeat(size)}`;
  if (kind === 'long string') return `"${'a'.repeat(size)}"`;
  return `[${Array.from({ length: size }, () => '0').join(',')}]`;
}

function fillingFor(context: FuzzContext): fc.Arbitrary<Filling> {
  const depth = fc.oneof(
    fc.constantFrom(62, 63, 64, 65, 4_500),
    fc.integer({ min: 1, max: 10_000 }),
  );
  const length = fc.integer({ min: 1, max: context.bodyLimitBytes * 2 });
  return fc.oneof(
    depth.map((size): Filling => ({ kind: 'deep object', size })),
    depth.map((size): Filling => ({ kind: 'deep array', size })),
    length.map((size): Filling => ({ kind: 'long string', size })),
    length.map((size): Filling => ({ kind: 'wide array', size: Math.ceil(size / 2) })),
  );
}

// A string no generated value holds, where the filling goes once the body is text: the filling
// itself is built as text, since JSON.stringify overflows the stack on the deepest.
const FILLING_MARK = '\u2063filling\u2063';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

// The shaped body with one field of one of its objects (a message's metadata, say) set to the
// filling: the rest of the body is right, so the filling reaches wherever the field is used.
function withFilling(value: unknown, choice: number, filling: Filling): string {
  const copy: unknown = structuredClone(value);
  const objects: Record<string, unknown>[] = [];
  const pending = [copy];
  for (let next = pending.pop(); next !== undefined; next = pending.pop()) {
    if (typeof next !== 'object' || next === null) continue;
    if (isRecord(next)) objects.push(next);
    pending.push(...Object.values(next));
  }
  const target = objects[choice % Math.max(objects.length, 1)];
  if (!target) return fillingText(filling);
  // Half the time metadata, which most routes take as any JSON and pass along.
  const keys = Object.keys(target);
  const at = Math.floor(choice / objects.length);
  target[at % 2 === 0 ? 'metadata' : (keys[(at >> 1) % Math.max(keys.length, 1)] ?? 'metadata')] =
    FILLING_MARK;
  return JSON.stringify(copy).replace(JSON.stringify(FILLING_MARK), () => fillingText(filling));
}

// Routes whose body is JSON Lines take one JSON value per line.
function isLines(mediaType: string): boolean {
  return mediaType === 'application/x-ndjson';
}

// The route's shaped body with one field filled deep, long or wide.
function filledBodyFor(route: Endpoint, context: FuzzContext): fc.Arbitrary<Body> {
  const [mediaType, zodSchema] = Object.entries(route.body ?? {})[0] ?? [];
  const schema = zodSchema ? convertSchema(zodSchema) : {};
  // Valid shapes, so that the filling is what the route meets.
  const shapeContext = { ...context, isStrict: true };
  const value = zodSchema
    ? valueFor(schema, { root: schema, context: shapeContext, depth: 0 })
    : fc.jsonValue({ maxDepth: 2 });
  return fc.tuple(value, fc.nat(), fillingFor(context)).map(
    ([shape, choice, filling]): Body => ({
      body: withFilling(shape, choice, filling),
      contentType: mediaType ?? 'application/json',
      kind: `shaped body with a ${filling.kind} of ${filling.size}`,
    }),
  );
}

const FORM_BOUNDARY = 'fuzz-form-boundary';
const FORM_TYPES = [
  'application/pdf',
  'application/vnd.openxmlformats-officedocument.wordprocessingml.document',
  'text/plain',
  'text/markdown',
  'text/html',
  'application/octet-stream',
  'image/png',
  'text/plain; charset=utf-16',
];
// What a part may hold: words, bytes, the start of a PDF or a ZIP without the rest.
const formContent = fc.oneof(
  fc.string({ maxLength: 200 }).map((text) => new TextEncoder().encode(text)),
  nastyString.map((text) => new TextEncoder().encode(text)),
  fc.uint8Array({ maxLength: 500 }),
  fc.constantFrom(
    new TextEncoder().encode('%PDF-1.7\n1 0 obj << /Type /Catalog >>'),
    new Uint8Array([0x50, 0x4b, 0x03, 0x04, 0, 0, 0, 0]),
  ),
);
const formPart = fc.record({
  name: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('file', 'title') },
    { weight: 1, arbitrary: fc.string({ maxLength: 20 }) },
  ),
  filename: fc.option(
    fc.oneof(fc.constantFrom('a.pdf', 'notes.txt', 'x.docx', 'page.html', ''), nastyString),
    { nil: undefined },
  ),
  type: fc.option(fc.constantFrom(...FORM_TYPES), { nil: undefined }),
  content: formContent,
});

// A form of up to four parts of any name, with or without a file name and type, sometimes cut
// short: for a route that takes multipart/form-data (a file upload).
function formBodyFor(): fc.Arbitrary<Body> {
  return fc
    .tuple(
      fc.array(formPart, { maxLength: 4 }),
      fc.oneof(
        { weight: 3, arbitrary: fc.constant(undefined) },
        { weight: 1, arbitrary: fc.nat() },
      ),
    )
    .map(([parts, cut]): Body => {
      const encoder = new TextEncoder();
      const pieces = parts.flatMap((part) => [
        encoder.encode(
          `--${FORM_BOUNDARY}\r\nContent-Disposition: form-data; name="${part.name}"` +
            (part.filename === undefined ? '' : `; filename="${part.filename}"`) +
            (part.type === undefined ? '' : `\r\nContent-Type: ${part.type}`) +
            '\r\n\r\n',
        ),
        part.content,
        encoder.encode('\r\n'),
      ]);
      pieces.push(encoder.encode(`--${FORM_BOUNDARY}--\r\n`));
      const whole = Buffer.concat(pieces);
      const body = cut === undefined ? whole : whole.subarray(0, cut % (whole.length + 1));
      return {
        body: new Uint8Array(body),
        contentType: `multipart/form-data; boundary=${FORM_BOUNDARY}`,
        kind: cut === undefined ? 'form' : 'form cut short',
      };
    });
}

function bodyFor(route: Endpoint, context: FuzzContext): fc.Arbitrary<Body> {
  const [mediaType, zodSchema] = Object.entries(route.body ?? {})[0] ?? [];
  const schema = zodSchema ? convertSchema(zodSchema) : {};
  const walk: SchemaWalk = { root: schema, context, depth: 0 };
  const type = mediaType ?? 'application/json';
  const value = zodSchema ? mostlyValid(schema, walk) : fc.jsonValue({ maxDepth: 2 });
  const text =
    mediaType && isLines(mediaType)
      ? fc
          .array(fc.oneof({ weight: 4, arbitrary: value }, { weight: 1, arbitrary: nastyString }), {
            minLength: 1,
            maxLength: 5,
          })
          .map((lines) => lines.map((line) => JSON.stringify(line)).join('\n'))
      : value.map((body) => JSON.stringify(body) ?? 'null');
  const shaped = text.map((body): Body => ({ body, contentType: type, kind: 'shaped body' }));
  if (context.isStrict) return zodSchema ? shaped : fc.constant({ kind: 'no body' });
  const oversized = `{"x":"${'a'.repeat(context.bodyLimitBytes + 1)}"}`;
  const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
  const takesForm = Object.keys(route.body ?? {}).includes('multipart/form-data');
  return fc.oneof(
    { weight: zodSchema ? 8 : 1, arbitrary: shaped },
    ...(takesForm ? [{ weight: 4, arbitrary: formBodyFor() }] : []),
    {
      weight: 2,
      arbitrary: fc
        .jsonValue({ maxDepth: 3 })
        .map((body): Body => ({ body: JSON.stringify(body), contentType: type, kind: 'any JSON' })),
    },
    { weight: 2, arbitrary: fc.constant<Body>({ kind: 'no body' }) },
    { weight: 2, arbitrary: filledBodyFor(route, context) },
    {
      weight: 1,
      arbitrary: fc
        .uint8Array({ maxLength: 300 })
        .map((body): Body => ({ body, contentType: type, kind: 'random bytes' })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(text, fc.nat()).map(
        ([body, cut]): Body => ({
          body: body.slice(0, cut % Math.max(body.length, 1)),
          contentType: type,
          kind: 'truncated JSON',
        }),
      ),
    },
    {
      weight: 1,
      arbitrary: fc.constantFrom<Body>(
        { body: oversized, contentType: type, kind: 'body over the limit' },
        { body: nested(20_000), contentType: type, kind: 'deeply nested JSON' },
        { body: '', contentType: type, kind: 'empty body' },
        { body: '\ufeff{}', contentType: type, kind: 'byte order mark' },
        { body: '{"a":1,"a":2}', contentType: type, kind: 'duplicate keys' },
      ),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(text, fc.constantFrom(...WRONG_CONTENT_TYPES))
        .map(([body, contentType]): Body => ({ body, contentType, kind: 'wrong content type' })),
    },
    {
      weight: 1,
      arbitrary: fc.tuple(text, fc.constantFrom(...CONTENT_ENCODINGS), fc.boolean()).map(
        ([body, encoding, isCompressed]): Body => ({
          body: isCompressed && encoding === 'gzip' ? gzipSync(body) : `${body}\u0000garbage`,
          contentType: type,
          encoding,
          kind: 'content encoding',
        }),
      ),
    },
  );
}

function authFor(route: Endpoint, context: FuzzContext): fc.Arbitrary<string | undefined> {
  const own =
    route.auth === 'admin'
      ? `Bearer ${context.adminKey}`
      : route.auth === 'user'
        ? `Bearer ${context.userKey}`
        : undefined;
  if (context.isStrict) return fc.constant(own);
  return fc.oneof(
    { weight: 12, arbitrary: fc.constant(own) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        undefined,
        'Bearer',
        'Bearer ',
        `bearer ${context.userKey}`,
        `Bearer ${context.userKey} extra`,
        `Basic ${Buffer.from(`x:${context.userKey}`).toString('base64')}`,
        `Bearer ${context.userKey}`,
        `Bearer jv_${'0'.repeat(4_000)}`,
      ),
    },
    { weight: 1, arbitrary: nastyString.map((text) => toHeaderValue(`Bearer ${text}`)) },
  );
}

function headersFor(route: Endpoint, context: FuzzContext): fc.Arbitrary<Record<string, string>> {
  const schema = route.headers ? convertSchema(route.headers) : {};
  const walk: SchemaWalk = { root: schema, context, depth: 0 };
  const model = Object.fromEntries(
    Object.entries(schema.properties ?? {}).map(([name, node]) => [
      name,
      valueFor(node, walk).map((value) => toHeaderValue(asText(value))),
    ]),
  );
  const routeHeaders = fc
    .record(model, { requiredKeys: [] })
    .map((headers) =>
      Object.fromEntries(
        Object.entries(headers).filter(
          (entry): entry is [string, string] => entry[1] !== undefined,
        ),
      ),
    );
  if (context.isStrict) return routeHeaders;
  return fc
    .tuple(routeHeaders, fc.option(fc.constantFrom(...ACCEPTS), { freq: 3 }))
    .map(([headers, accept]) => (accept === null ? headers : { ...headers, accept }));
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'];

// Well-formed requests (the route's own method, key and headers) whose body has one field, at
// any depth of it, filled deep, long or wide: the depth and size fuzz of a route with a body.
export function filledRequestFor(route: Endpoint, context: FuzzContext): fc.Arbitrary<FuzzRequest> {
  return fc
    .tuple(requestFor(route, { ...context, isStrict: true }), filledBodyFor(route, context))
    .map(([shaped, body]): FuzzRequest => {
      const request = {
        method: shaped.method,
        path: shaped.path,
        headers: { ...shaped.headers, 'content-type': body.contentType ?? 'application/json' },
        body: body.body,
        variant: body.kind,
      };
      return { ...request, [fc.toStringMethod]: () => describeRequest(request) };
    });
}

export function requestFor(route: Endpoint, context: FuzzContext): fc.Arbitrary<FuzzRequest> {
  const method = route.method.toUpperCase();
  const methods = context.isStrict
    ? fc.constant(method)
    : fc.oneof({ weight: 15, arbitrary: fc.constant(method) }, fc.constantFrom(...METHODS));
  return fc
    .record({
      method: methods,
      path: pathFor(route, context),
      query: queryFor(route, context),
      body: bodyFor(route, context),
      auth: authFor(route, context),
      headers: headersFor(route, context),
    })
    .map(({ method: chosen, path, query, body, auth, headers }): FuzzRequest => {
      const all: Record<string, string> = { ...headers };
      if (auth) all.authorization = auth;
      if (body.contentType) all['content-type'] = body.contentType;
      if (body.encoding) all['content-encoding'] = body.encoding;
      // fetch cannot send a body with GET.
      const hasBody = body.body !== undefined && chosen !== 'GET';
      const request = {
        method: chosen,
        path: `${path}${query}`,
        headers: all,
        ...(hasBody ? { body: body.body } : {}),
        variant: hasBody ? body.kind : 'no body',
      };
      return { ...request, [fc.toStringMethod]: () => describeRequest(request) };
    });
}
