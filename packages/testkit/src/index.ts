export * from './fake-llm';
export * from './infra';
export * from './process';
export * from './stack';
