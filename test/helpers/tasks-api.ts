/** The example tasks API (examples/tasks-api-server.mjs) is the real HTTP server the tests call. */
export { TasksApi, TOKEN } from '../../examples/tasks-api-server.mjs';
