export * from './backup';
export { BackupFileError } from './backup-file';
export * from './embedded';
export * from './migrate';
export * from './pool';
