// The worker's entry under the tests, where extract-worker.ts is TypeScript: Node 20 applies no
// --import hooks to a worker's own entry file, so tsx loads it from here. The image runs the
// bundled dist/extract-worker.js directly and never this file.
import { tsImport } from 'tsx/esm/api';

await tsImport(new URL('./extract-worker.ts', import.meta.url).href, import.meta.url);
