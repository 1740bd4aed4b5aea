export * from './local-embedder';
