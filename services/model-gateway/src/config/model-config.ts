import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import type { Env } from '../env';

const PURPOSES = ['chat', 'utility', 'embed'] as const;
export type Purpose = (typeof PURPOSES)[number];

const ModelRef = z.string().regex(/^[a-z][a-z0-9-]*\/\S+$/, 'provider/model');

const ModelInfo = z.object({
  contextWindow: z.number().int().positive(),
  inputUsdPerMTok: z.number().nonnegative(),
  outputUsdPerMTok: z.number().nonnegative(),
});
export type ModelInfo = z.infer<typeof ModelInfo>;

const ConfigFile = z.object({
  routes: z.object({
    chat: z.array(ModelRef),
    utility: z.array(ModelRef),
    embed: z.array(ModelRef),
  }),
  models: z.record(ModelRef, ModelInfo),
});

export type ModelTarget = { ref: string; provider: string; model: string; info: ModelInfo };

export type ModelConfig = {
  routes: Record<Purpose, ModelTarget[]>;
  // Models named in a route whose price the file does not give: their calls count as free.
  unpriced: string[];
};

// The file that ships next to the service: infra/ in the repo, /app/infra in the image.
const BUNDLED_CONFIG = fileURLToPath(new URL('../../../../infra/models.json', import.meta.url));

function readConfigFile(path: string): z.infer<typeof ConfigFile> {
  let json: unknown;
  try {
    json = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new Error(`cannot read model config ${path}: ${(error as Error).message}`);
  }
  const parsed = ConfigFile.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map(
      (issue) => `${issue.path.join('.')}: ${issue.message}`,
    );
    throw new Error(`model config ${path} is invalid: ${problems.join('; ')}`);
  }
  return parsed.data;
}

// Routes from the file, each overridable by env, keeping only models whose provider is usable.
export function loadModelConfig(env: Env, available: (provider: string) => boolean): ModelConfig {
  const file = readConfigFile(env.MODEL_CONFIG_FILE ?? BUNDLED_CONFIG);
  const overrides: Record<Purpose, string[] | undefined> = {
    chat: env.MODEL_ROUTE_CHAT,
    utility: env.MODEL_ROUTE_UTILITY,
    embed: env.MODEL_ROUTE_EMBED,
  };
  const unpriced = new Set<string>();
  const variables: Record<string, string> = {
    OLLAMA_CHAT_MODEL: env.OLLAMA_CHAT_MODEL,
    OLLAMA_EMBED_MODEL: env.OLLAMA_EMBED_MODEL,
  };
  const target = (entry: string): ModelTarget => {
    const ref = entry.replace(/\$\{(\w+)\}/g, (whole, name: string) => variables[name] ?? whole);
    const checked = ModelRef.safeParse(ref);
    if (!checked.success) throw new Error(`model route entry "${ref}" is not provider/model`);
    const slash = ref.indexOf('/');
    const known = file.models[ref];
    if (!known) unpriced.add(ref);
    const provider = ref.slice(0, slash);
    const info = known ?? {
      contextWindow: env.MODEL_DEFAULT_CONTEXT_WINDOW,
      inputUsdPerMTok: 0,
      outputUsdPerMTok: 0,
    };
    // Ollama reads no more than the window it is run with, whatever the model could take.
    const contextWindow =
      provider === 'ollama' ? Math.min(info.contextWindow, env.OLLAMA_NUM_CTX) : info.contextWindow;
    return { ref, provider, model: ref.slice(slash + 1), info: { ...info, contextWindow } };
  };
  const routes = Object.fromEntries(
    PURPOSES.map((purpose) => [
      purpose,
      (overrides[purpose] ?? file.routes[purpose])
        .map(target)
        .filter((entry) => available(entry.provider)),
    ]),
  ) as Record<Purpose, ModelTarget[]>;
  return { routes, unpriced: [...unpriced].filter((ref) => isRouted(routes, ref)) };
}

function isRouted(routes: Record<Purpose, ModelTarget[]>, ref: string): boolean {
  return PURPOSES.some((purpose) => routes[purpose].some((entry) => entry.ref === ref));
}

export function costOf(info: ModelInfo, inputTokens: number, outputTokens: number): number {
  return (inputTokens * info.inputUsdPerMTok + outputTokens * info.outputUsdPerMTok) / 1_000_000;
}
