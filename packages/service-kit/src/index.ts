export * from './boot-service';
export * from './env';
export * from './http-error';
export * from './rate-limiter';
export * from './redis-script';
export * from './service';
