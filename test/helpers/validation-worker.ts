import { workerBundleUrl } from './worker-bundle.js';

/** The validation worker bundled from the current sources, for unit tests that construct a ValidationEngine. */
export const validationWorkerUrl = (): Promise<URL> => workerBundleUrl('src/engine/validation-worker.ts');
