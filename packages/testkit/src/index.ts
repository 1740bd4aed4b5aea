export * from './fake-llm';
export * from './http-recorder';
export * from './infra';
export * from './process';
export * from './redis-server';
export * from './sse-client';
export * from './stack';
export * from './stack-fixture';
