import { resolve } from 'node:path';

// The repository's root, from which the benches start services from their source.
export const ROOT_DIR = resolve(import.meta.dirname, '../..');
// Where every bench writes its figures.
export const RESULTS_DIR = resolve(ROOT_DIR, 'bench-results');
// LoCoMo's dev half, kept beside the repository rather than in it.
export const LOCOMO_DEV = resolve(ROOT_DIR, '../shared/data/locomo-dev.json');
