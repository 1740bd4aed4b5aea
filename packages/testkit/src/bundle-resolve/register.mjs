import { register } from 'node:module';

// What a service run from its bundle is started with (`node --import` this file, see stack.ts):
// plain node, without tsx, loads it. The hooks run on the loader's thread.
register('./hooks.mjs', import.meta.url);
