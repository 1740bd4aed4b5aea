export * from './bus';
export * from './bus-error';
export { describeZodError } from './codec';
export * from './work-queue';
