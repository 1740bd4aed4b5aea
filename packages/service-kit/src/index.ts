export * from './env';
export * from './http-error';
export * from './service';
