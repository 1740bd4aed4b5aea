export * from './embedded';
export * from './migrate';
export * from './pool';
