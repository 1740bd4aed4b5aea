export * from './local-embedder';
export * from './terms';
