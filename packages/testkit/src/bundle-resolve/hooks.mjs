import { readdirSync } from 'node:fs';

// A bundle imports its npm packages by name, those of the workspace packages it inlined too
// (pino, prom-client, ...), which pnpm links only into their own package's node_modules: a name
// services/<name>/ cannot resolve is resolved as from each workspace package in turn (the
// version that package declares), as the image's flat node_modules holds them. Not from pnpm's
// hoisted folder of every package: that holds vitest's newer @opentelemetry/api too, and a second
// copy of it cannot see the tracer provider the SDK registered through the first.
// The test kit is left out: the services do not bundle it, and its test tools are no service's.
const PACKAGES = new URL('../../../', import.meta.url);
const PARENTS = readdirSync(PACKAGES)
  .filter((name) => name !== 'testkit')
  .map((name) => new URL(`${name}/package.json`, PACKAGES).href);

export async function resolve(specifier, context, next) {
  try {
    return await next(specifier, context);
  } catch (error) {
    if (error?.code !== 'ERR_MODULE_NOT_FOUND' || /^[./]|^[a-z]+:/.test(specifier)) throw error;
    for (const parentURL of PARENTS) {
      try {
        return await next(specifier, { ...context, parentURL });
      } catch {
        // Not a dependency of this workspace package.
      }
    }
    throw error;
  }
}
