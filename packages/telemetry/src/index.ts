export * from './gen-ai';
export * from './logger';
export * from './metrics';
export * from './tracing';
