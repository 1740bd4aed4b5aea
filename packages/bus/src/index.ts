export * from './blob-store';
export * from './bus';
export * from './bus-error';
export { describeZodError } from './codec';
export * from './event-stream';
export * from './turn-outcome';
export * from './user-events';
export * from './work-queue';
