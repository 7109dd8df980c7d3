import { workerBundleUrl } from './worker-bundle.js';

/** The SQLite store's checkpoint thread bundled from the current sources, for store tests. */
export const checkpointWorkerUrl = (): Promise<URL> =>
  workerBundleUrl('src/store/sqlite/checkpoint-worker.ts');
