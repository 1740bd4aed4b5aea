import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';

// Grafana, Tempo and Loki cannot run on these machines, so the links between what is provisioned
// are checked from the files: a dashboard or datasource naming a uid nobody provisions shows
// "datasource not found", and a LogQL selector on a label the collector never sets matches no
// stream at all, silently.
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(join(ROOT, path), 'utf8');
const PROVISIONING = 'infra/observability/grafana/provisioning';
const DASHBOARDS = 'infra/grafana/dashboards';
const DASHBOARD_FILES = [
  'agent.json',
  'memory.json',
  'scheduler-notifications.json',
  'services-infrastructure.json',
];
// Grafana's own pseudo-datasources: annotations and mixed panels, and server-side expressions.
const BUILT_IN_UIDS = new Set([
  '-- Grafana --',
  'grafana',
  '-- Mixed --',
  '-- Dashboard --',
  '__expr__',
]);

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonObject = { [key: string]: Json };

const isObject = (value: Json | undefined): value is JsonObject =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

// Every object in a tree, depth first.
function* objects(value: Json): Generator<JsonObject> {
  if (Array.isArray(value)) {
    for (const item of value) yield* objects(item);
  } else if (isObject(value)) {
    yield value;
    for (const item of Object.values(value)) yield* objects(item);
  }
}

const yamlFiles = (folder: string) =>
  readdirSync(join(ROOT, folder))
    .filter((name) => /\.ya?ml$/.test(name))
    .map((name) => `${folder}/${name}`);

// Grafana expands $VAR and ${VAR} in the values of provisioning files from its environment ($$ is
// a literal $), but not in an alert rule's annotations nor its queries' models, which it reads raw
// (templates such as {{ $labels.job }} live there, and PromQL).
const RAW_IN_ALERTING = new Set(['annotations', 'model']);
const ENV_REFERENCE = /\$\$|\$\{([^}]+)\}|\$([A-Za-z_]\w*)/g;

// A parsed provisioning file as Grafana means it: each expanded value passed to `expand`.
function mapExpandedValues(value: Json, raw: Set<string>, expand: (text: string) => string): Json {
  if (typeof value === 'string') return expand(value);
  if (Array.isArray(value)) return value.map((item) => mapExpandedValues(item, raw, expand));
  if (!isObject(value)) return value;
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [
      key,
      raw.has(key) ? item : mapExpandedValues(item, raw, expand),
    ]),
  );
}

function grafanaEnvironment(): Record<string, string> {
  const compose = parse(read('compose.observability.yaml'));
  return compose.services.grafana.environment;
}

// Each file of a provisioning folder as Grafana reads it (a variable its container gets becomes
// <NAME>), with the variables it expands.
function readProvisioning(folder: string): { file: string; doc: Json; variables: string[] }[] {
  const env = grafanaEnvironment();
  const raw = folder === 'alerting' ? RAW_IN_ALERTING : new Set<string>();
  return yamlFiles(`${PROVISIONING}/${folder}`).map((file) => {
    const variables: string[] = [];
    const doc = mapExpandedValues(parse(read(file)) as Json, raw, (text) =>
      text.replace(ENV_REFERENCE, (match, braced?: string, bare?: string) => {
        if (match === '$$') return '$';
        const name = braced ?? bare ?? '';
        variables.push(name);
        return name in env ? `<${name}>` : '';
      }),
    );
    return { file, doc, variables };
  });
}

type Datasource = { uid: string; type: string; name: string; jsonData: JsonObject };

function provisionedDatasources(): Datasource[] {
  return readProvisioning('datasources').flatMap(({ doc }) => {
    const list = isObject(doc) && Array.isArray(doc.datasources) ? doc.datasources : [];
    return list.filter(isObject).map((ds) => ({
      uid: String(ds.uid),
      type: String(ds.type),
      name: String(ds.name),
      jsonData: isObject(ds.jsonData) ? ds.jsonData : {},
    }));
  });
}

type AlertQuery = { rule: string; refId: string; datasourceUid: string; model: JsonObject };
type AlertRule = { uid: string; condition: string; queries: AlertQuery[] };

function provisionedRules(): AlertRule[] {
  return readProvisioning('alerting').flatMap(({ doc }) => {
    const groups = isObject(doc) && Array.isArray(doc.groups) ? doc.groups : [];
    return groups.filter(isObject).flatMap((group) =>
      (Array.isArray(group.rules) ? group.rules : []).filter(isObject).map((rule) => ({
        uid: String(rule.uid),
        condition: String(rule.condition),
        queries: (Array.isArray(rule.data) ? rule.data : []).filter(isObject).map((query) => ({
          rule: String(rule.uid),
          refId: String(query.refId),
          datasourceUid: String(query.datasourceUid),
          model: isObject(query.model) ? query.model : {},
        })),
      })),
    );
  });
}

function dashboards(): { file: string; doc: JsonObject }[] {
  const names = readdirSync(join(ROOT, DASHBOARDS)).filter((name) => name.endsWith('.json'));
  return names.map((name) => ({
    file: name,
    doc: JSON.parse(read(`${DASHBOARDS}/${name}`)) as JsonObject,
  }));
}

// A datasource reference in a dashboard: {uid, type}, a name or uid string, or a template
// variable ($ds, ${ds}) that must be a datasource variable of a provisioned type.
function unresolvedReference(
  ref: Json,
  datasources: Datasource[],
  variables: Map<string, JsonObject>,
): string | undefined {
  const uid = isObject(ref) ? ref.uid : ref;
  if (uid === null || uid === undefined) return undefined; // the dashboard's default datasource
  if (typeof uid !== 'string') return JSON.stringify(ref);
  if (BUILT_IN_UIDS.has(uid)) return undefined;
  const variable = /^\$\{?(\w+)/.exec(uid)?.[1];
  if (variable !== undefined) {
    const definition = variables.get(variable);
    const ok =
      definition?.type === 'datasource' && datasources.some((ds) => ds.type === definition.query);
    return ok ? undefined : uid;
  }
  return datasources.some((ds) => ds.uid === uid || ds.name === uid) ? undefined : uid;
}

// Whether a query object (a panel target, a variable) runs on Loki: its own datasource, or
// failing that its panel's.
function isLoki(ref: Json | undefined, datasources: Datasource[]): boolean {
  const uid = isObject(ref) ? ref.uid : ref;
  const type = isObject(ref) ? ref.type : undefined;
  return type === 'loki' || datasources.some((ds) => ds.type === 'loki' && ds.uid === uid);
}

// Every LogQL query of the dashboards, with where it is.
function dashboardLogQueries(datasources: Datasource[]): { where: string; query: string }[] {
  const found: { where: string; query: string }[] = [];
  for (const { file, doc } of dashboards()) {
    for (const node of objects(doc)) {
      const targets = Array.isArray(node.targets) ? node.targets.filter(isObject) : [];
      for (const target of targets) {
        const ref = target.datasource ?? node.datasource;
        if (typeof target.expr === 'string' && isLoki(ref, datasources))
          found.push({ where: `${file}: ${node.title ?? node.id}`, query: target.expr });
      }
    }
    const variables = isObject(doc.templating) ? doc.templating.list : [];
    for (const variable of Array.isArray(variables) ? variables.filter(isObject) : []) {
      const query = isObject(variable.query) ? variable.query.query : variable.query;
      if (typeof query === 'string' && isLoki(variable.datasource, datasources))
        found.push({ where: `${file}: variable ${variable.name}`, query });
    }
  }
  return found;
}

// The label names in a LogQL query's stream selectors ({name="value", ...}): string literals and
// Grafana's variables are taken out first, since either may hold braces.
function streamSelectorLabels(query: string): string[] {
  const bare = query
    .replace(/"(?:[^"\\]|\\.)*"|`[^`]*`/g, '""')
    .replace(/\$\{[^}]*\}|\$\w+|\[\[\w+\]\]/g, 'VAR');
  const labels: string[] = [];
  for (const selector of bare.matchAll(/\{([^{}]*)\}/g)) {
    for (const matcher of (selector[1] ?? '').split(',')) {
      const name = /^\s*([A-Za-z_]\w*)\s*(=~|!~|!=|=)/.exec(matcher)?.[1];
      if (name === undefined) {
        if (matcher.trim() !== '') labels.push(`<unparsed: ${matcher.trim()}>`);
      } else labels.push(name);
    }
  }
  return labels;
}

// What the collector sets on Loki's streams: the relabel rules' target labels (not the internal
// __ ones) and the keys of stage.labels; and what it sends as structured metadata.
function alloyStreamLabels(config: string): Set<string> {
  const labels = new Set<string>();
  for (const match of config.matchAll(/target_label\s*=\s*"([^"]+)"/g)) {
    if (!match[1]?.startsWith('__')) labels.add(match[1] ?? '');
  }
  for (const key of stageValues(config, 'stage.labels')) labels.add(key);
  return labels;
}

function stageValues(config: string, stage: string): string[] {
  const keys: string[] = [];
  const pattern = new RegExp(
    `${stage.replace('.', '\\.')}\\s*\\{\\s*values\\s*=\\s*\\{([^}]*)\\}`,
    'g',
  );
  for (const block of config.matchAll(pattern)) {
    for (const key of (block[1] ?? '').matchAll(/([A-Za-z_]\w*)\s*=/g)) keys.push(key[1] ?? '');
  }
  return keys;
}

const ALLOY = read('infra/observability/alloy/config.alloy');
// Grafana's variable for a trace-to-logs query's tags; its syntax, not a JavaScript template.
const TAGS_VARIABLE = ['$', '{__tags}'].join('');

describe('the collector', () => {
  it('labels streams service_name and level, and sends trace_id as structured metadata', () => {
    expect([...alloyStreamLabels(ALLOY)].sort()).toEqual(['level', 'service_name']);
    expect(stageValues(ALLOY, 'stage.structured_metadata')).toEqual(['trace_id']);
  });

  it('reads LogQL selectors as the test means to', () => {
    expect(streamSelectorLabels('{service_name=~"$service", level!="debug"} |= "{x}"')).toEqual([
      'service_name',
      'level',
    ]);
    expect(
      streamSelectorLabels('sum by (level) (count_over_time({container="x"} | json [5m]))'),
    ).toEqual(['container']);
    expect(streamSelectorLabels(`{${TAGS_VARIABLE}} | trace_id="$x"`)).toEqual(['<unparsed: VAR>']);
  });
});

describe('provisioned datasources', () => {
  const datasources = provisionedDatasources();

  it('are Prometheus, Tempo and Loki, under their fixed uids', () => {
    expect(datasources.map((ds) => `${ds.type}:${ds.uid}`).sort()).toEqual([
      'loki:loki',
      'prometheus:prometheus',
      'tempo:tempo',
    ]);
  });

  it('link only to provisioned uids', () => {
    const uids = new Set(datasources.map((ds) => ds.uid));
    const links = datasources.flatMap((ds) =>
      [...objects(ds.jsonData)]
        .filter((node) => typeof node.datasourceUid === 'string')
        .map((node) => ({ from: ds.uid, to: String(node.datasourceUid) })),
    );
    // Both ways: traces to logs and metrics, the service map, logs and exemplars to traces.
    expect(links.length).toBeGreaterThanOrEqual(5);
    expect(links.filter((link) => !uids.has(link.to))).toEqual([]);
    const byPair = new Set(links.map((link) => `${link.from}->${link.to}`));
    for (const pair of ['tempo->loki', 'tempo->prometheus', 'loki->tempo', 'prometheus->tempo'])
      expect(byPair).toContain(pair);
  });

  it("Tempo's logs query selects only labels the collector sets, and filters on trace_id", () => {
    const tempo = datasources.find((ds) => ds.uid === 'tempo');
    const logs = tempo?.jsonData.tracesToLogsV2;
    expect(isObject(logs)).toBe(true);
    if (!isObject(logs)) return;
    const tags = (Array.isArray(logs.tags) ? logs.tags : []).filter(isObject);
    // Grafana puts the tags (span attribute -> Loki label) where the query says ${__tags}.
    const matchers = tags.map((tag) => `${String(tag.value ?? tag.key)}="x"`).join(',');
    const query = String(logs.query).replace(TAGS_VARIABLE, matchers);
    expect(query).toContain('trace_id');
    const labels = streamSelectorLabels(query);
    expect(labels.length).toBeGreaterThan(0);
    expect(labels.filter((label) => !alloyStreamLabels(ALLOY).has(label))).toEqual([]);
  });

  it("Loki's trace_id link reads the structured metadata the collector sends", () => {
    const loki = datasources.find((ds) => ds.uid === 'loki');
    const fields = (Array.isArray(loki?.jsonData.derivedFields) ? loki.jsonData.derivedFields : [])
      .filter(isObject)
      .filter((field) => field.datasourceUid === 'tempo');
    expect(fields.length).toBe(1);
    expect(fields[0]?.matcherType).toBe('label');
    expect(stageValues(ALLOY, 'stage.structured_metadata')).toContain(fields[0]?.matcherRegex);
  });

  it('expand only variables Grafana is given, with every literal $ escaped', () => {
    const env = grafanaEnvironment();
    for (const folder of ['datasources', 'dashboards', 'alerting']) {
      for (const { file, variables } of readProvisioning(folder)) {
        const missing = variables.filter((name) => !(name in env));
        expect(missing, file).toEqual([]);
      }
    }
  });
});

describe('dashboards', () => {
  const datasources = provisionedDatasources();

  it('are the four, each with its own uid, where the provider loads them', () => {
    const found = dashboards();
    expect(found.map((d) => d.file).sort()).toEqual(DASHBOARD_FILES);
    const uids = found.map((d) => d.doc.uid);
    expect(new Set(uids).size).toBe(uids.length);
    // The provider reads the folder compose mounts infra/grafana/dashboards at.
    const compose = parse(read('compose.observability.yaml'));
    const mount = (compose.services.grafana.volumes as string[]).find((volume) =>
      volume.startsWith(`./${DASHBOARDS}:`),
    );
    const providers = readProvisioning('dashboards').flatMap(({ doc }) =>
      isObject(doc) && Array.isArray(doc.providers) ? doc.providers.filter(isObject) : [],
    );
    expect(providers.map((p) => (isObject(p.options) ? p.options.path : undefined))).toEqual([
      mount?.split(':')[1],
    ]);
  });

  it('reference only provisioned datasources, in panels, targets and variables', () => {
    let references = 0;
    const unresolved: string[] = [];
    for (const { file, doc } of dashboards()) {
      const templating = isObject(doc.templating) ? doc.templating.list : [];
      const variables = new Map(
        (Array.isArray(templating) ? templating.filter(isObject) : []).map((v) => [
          String(v.name),
          v,
        ]),
      );
      for (const node of objects(doc)) {
        if (!('datasource' in node)) continue;
        references += 1;
        const bad = unresolvedReference(node.datasource ?? null, datasources, variables);
        if (bad !== undefined) unresolved.push(`${file}: ${String(node.title ?? node.id)}: ${bad}`);
      }
    }
    expect(references).toBeGreaterThan(0);
    expect(unresolved).toEqual([]);
  });

  it('query Loki only on the labels the collector sets', () => {
    const allowed = alloyStreamLabels(ALLOY);
    const queries = dashboardLogQueries(datasources);
    // The logs panel of Services & infrastructure at least.
    expect(queries.length).toBeGreaterThan(0);
    const offending = queries.flatMap(({ where, query }) =>
      streamSelectorLabels(query)
        .filter((label) => !allowed.has(label))
        .map((label) => `${where}: ${label} in ${query}`),
    );
    expect(offending).toEqual([]);
    for (const { query } of queries) expect(streamSelectorLabels(query).length).toBeGreaterThan(0);
  });
});

describe('alerting', () => {
  const datasources = provisionedDatasources();
  const rules = provisionedRules();

  it('has the five rules, each on a provisioned datasource and with its condition among its queries', () => {
    expect(rules.map((rule) => rule.uid).sort()).toEqual([
      'jarvis-budget-nearly-spent',
      'jarvis-http-errors',
      'jarvis-jetstream-lag',
      'jarvis-reminders-missed',
      'jarvis-service-down',
    ]);
    const uids = new Set([...datasources.map((ds) => ds.uid), '__expr__']);
    for (const rule of rules) {
      expect(
        rule.queries.filter((q) => !uids.has(q.datasourceUid)),
        rule.uid,
      ).toEqual([]);
      expect(
        rule.queries.map((q) => q.refId),
        rule.uid,
      ).toContain(rule.condition);
    }
  });

  it('writes annotation templates as Grafana reads them: raw, so $labels without a $$ escape', () => {
    const annotations = readProvisioning('alerting').flatMap(({ doc }) =>
      [...objects(doc)].flatMap((node) =>
        isObject(node.annotations) ? Object.values(node.annotations).map(String) : [],
      ),
    );
    expect(annotations.length).toBeGreaterThanOrEqual(rules.length);
    expect(annotations.filter((text) => text.includes('$$'))).toEqual([]);
  });

  it('queries Loki, if at all, only on the labels the collector sets', () => {
    const allowed = alloyStreamLabels(ALLOY);
    const loki = rules
      .flatMap((rule) => rule.queries)
      .filter((q) => isLoki(q.datasourceUid, datasources));
    for (const q of loki) {
      const labels = streamSelectorLabels(String(q.model.expr));
      expect(labels.length, q.rule).toBeGreaterThan(0);
      expect(
        labels.filter((label) => !allowed.has(label)),
        q.rule,
      ).toEqual([]);
    }
  });

  it('sends every alert to the admin through the gateway, with the admin key', () => {
    const [contactPoints, policies] = ['contactPoints', 'policies'].map((key) =>
      readProvisioning('alerting').flatMap(({ doc }) =>
        isObject(doc) && Array.isArray(doc[key]) ? doc[key].filter(isObject) : [],
      ),
    );
    expect(policies?.map((policy) => policy.receiver)).toEqual(
      contactPoints?.map((point) => point.name),
    );
    const receiver = [...objects(contactPoints ?? [])].find((node) => node.type === 'webhook');
    expect(receiver?.settings).toMatchObject({
      url: 'http://gateway:8080/v1/admin/alerts',
      authorization_scheme: 'Bearer',
      authorization_credentials: '<JARVIS_ADMIN_KEY>',
    });
  });
});
