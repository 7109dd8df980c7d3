import type { AuthInfo } from '@modelcontextprotocol/server';
import { LOCAL_PRINCIPAL } from '../executions/execution-model.js';

/**
 * Who calls: the principal the HTTP layer authenticated (carried in the request's auth info), else
 * `fallback`, the one the server was built for (the local user on stdio). The one place a caller's
 * identity is worked out, for tools/call, direct methods, resources, tasks and the HTTP layer alike.
 */
export function principalOf(auth: AuthInfo | undefined, fallback: string = LOCAL_PRINCIPAL): string {
  const principal = auth?.extra?.principal;
  return typeof principal === 'string' ? principal : fallback;
}
