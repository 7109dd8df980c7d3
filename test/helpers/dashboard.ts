import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { request } from 'node:http';
import { CLI, type Sandbox, SPAWNED_WAIT_MS } from './server.js';

/** `workflowlookup dashboard --port 0` as a child process, with the URL it printed. */
export interface DashboardProcess {
  child: ChildProcessWithoutNullStreams;
  url: string;
  port: number;
  stderr: () => string;
  /** SIGTERM, then the exit code (null if killed). */
  stop: () => Promise<number | null>;
}

export async function startDashboard(
  sb: Sandbox,
  env: Record<string, string> = {},
  args: string[] = ['--port', '0'],
): Promise<DashboardProcess> {
  const child = spawn(process.execPath, [CLI, 'dashboard', ...args], {
    env: { ...sb.env, ...env },
    cwd: sb.project,
  });
  let out = '';
  let err = '';
  child.stderr.setEncoding('utf8').on('data', (c: string) => {
    err += c;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`dashboard did not start: ${out}${err}`)),
      SPAWNED_WAIT_MS,
    );
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const match = /(http:\/\/127\.0\.0\.1:\d+\/)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`dashboard exited (${code}): ${out}${err}`));
    });
  });
  return {
    child,
    url,
    port: Number(new URL(url).port),
    stderr: () => err,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      return exited;
    },
  };
}

export interface RawResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** An HTTP request with full control of the headers (fetch cannot set Host or Origin). */
export function raw(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers ?? {} },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          body += c;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end(options.body);
  });
}

/** The CSRF field of a confirmation form (GET ...?confirm=pause). */
export function csrfOf(html: string): string {
  const match = /name="csrf" value="([^"]+)"/.exec(html);
  if (!match) throw new Error('no csrf field in the page');
  return match[1] as string;
}

/** What the Approvals page's form says it decides: the approval id and its output's digest (by position). */
export function decisionFieldsOf(html: string, index = 0): { approval: string; output: string } {
  const approvals = [...html.matchAll(/name="approval" value="([^"]+)"/g)].map((m) => m[1] as string);
  const outputs = [...html.matchAll(/name="output" value="([^"]+)"/g)].map((m) => m[1] as string);
  const approval = approvals[index];
  const output = outputs[index];
  if (approval === undefined || output === undefined) throw new Error('no decision form in the page');
  return { approval, output };
}
