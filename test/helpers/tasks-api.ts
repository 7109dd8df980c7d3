import { join } from 'node:path';
import { TasksApi, TOKEN } from '../../examples/tasks-api-server.mjs';
import { type Sandbox, sandbox } from './server.js';

/** The example tasks API (examples/tasks-api-server.mjs) is the real HTTP server the tests call. */
export { TasksApi, TOKEN };

/**
 * The example API started on 127.0.0.1, and a sandbox whose server may call it (a private host, allowed
 * by name) with its credential, keeping its store in `<root>/data`.
 */
export async function apiSandbox(): Promise<{ api: TasksApi; sb: Sandbox }> {
  const api = new TasksApi();
  await api.start();
  const sb = sandbox({
    WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS: `127.0.0.1:${api.port}`,
    WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN: TOKEN,
  });
  sb.env.WORKFLOWLOOKUP_DATA_DIR = join(sb.root, 'data');
  return { api, sb };
}
