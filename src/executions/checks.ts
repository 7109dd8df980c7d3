// Checks the server runs itself when an agent submits a step that names one (`verify: {check}`): the
// operator defines them (WORKFLOWLOOKUP_CHECKS_FILE); a workflow only names one, and neither the
// workflow nor the agent ever supplies a command, an argument, a path or an environment variable.
import { spawn } from 'node:child_process';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';
import { type CommandStepRunner, durationMs } from '../catalogs/command-steps.js';
import { Scrubber } from '../catalogs/credentials.js';
import { DomainFailure, fail } from '../engine/errors.js';
import { contextScope } from '../engine/guidance.js';
import { CHECK_NAME_PATTERN, type CommandStep, durationSchema } from '../model/workflow.js';
import { ATTR, inSpan } from '../telemetry/trace.js';

/** Bounds of what the operator may configure (a check is not a build farm). */
export const CHECK_LIMITS = {
  maxTimeoutMs: 3_600_000,
  defaultTimeoutMs: 120_000,
  defaultMaxOutput: 16_384,
  maxOutput: 1_048_576,
  /** After the timeout's SIGTERM, the process group gets this long before SIGKILL. */
  killGraceMs: 2_000,
} as const;

const EnvNameSchema = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, 'an environment variable name');

const CommandCheckSchema = z.strictObject({
  description: z.string().max(500).optional(),
  command: z
    .string()
    .min(1)
    .max(4096)
    .describe('Executable: an absolute path, or a name found on the allowed PATH'),
  args: z.array(z.string().max(4096)).max(200).default([]),
  /**
   * `roots`: the client's first MCP root (file://) where it sends roots, else `directory`;
   * `directory`: always `directory`.
   */
  cwd: z.enum(['roots', 'directory']).default('roots'),
  directory: z.string().min(1).optional(),
  /** Roots a client sends must lie inside one of these (default: any root the client sends). */
  roots_within: z.array(z.string().min(1)).max(50).optional(),
  timeout: durationSchema(CHECK_LIMITS.maxTimeoutMs).optional(),
  env: z.array(EnvNameSchema).max(200).default([]),
  max_output: z.number().int().min(256).max(CHECK_LIMITS.maxOutput).default(CHECK_LIMITS.defaultMaxOutput),
  enabled: z.boolean().default(true),
});

const HttpCheckSchema = z.strictObject({
  description: z.string().max(500).optional(),
  /** An operation of an imported catalog: "<catalog> <command>", with its arguments. */
  http: z.strictObject({
    run: z.string().min(3).max(256),
    with: z.record(z.string(), z.unknown()).optional(),
    body: z.unknown().optional(),
  }),
  timeout: durationSchema(300_000).optional(),
  enabled: z.boolean().default(true),
});

const CheckSchema = z.union([CommandCheckSchema, HttpCheckSchema]);

export const ChecksFileSchema = z.strictObject({
  // Names are checked on their own (loadChecksFile), for a message that says what a name may be.
  checks: z.record(z.string(), CheckSchema),
});

export type CommandCheck = z.infer<typeof CommandCheckSchema>;
export type HttpCheck = z.infer<typeof HttpCheckSchema>;
export type CheckDefinition = CommandCheck | HttpCheck;

/** The configured checks and whether this server may run them. */
export interface ChecksConfig {
  /** Where they came from (for messages). */
  file: string;
  checks: ReadonlyMap<string, CheckDefinition>;
  /** False on `serve --http` without WORKFLOWLOOKUP_HTTP_CHECKS=1: known, but never run. */
  allowed: boolean;
}

/** Reads and checks the operator's checks file (JSON or YAML); a bad one is an error naming the file. */
export function loadChecksFile(file: string, baseDir: string): Map<string, CheckDefinition> {
  const text = readFileSync(file, 'utf8');
  let raw: unknown;
  try {
    raw = /\.json$/i.test(file) ? JSON.parse(text) : parseYaml(text, { maxAliasCount: 100 });
  } catch (error) {
    throw new Error(
      `${file}: not valid ${/\.json$/i.test(file) ? 'JSON' : 'YAML'}: ${(error as Error).message}`,
    );
  }
  const parsed = ChecksFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`${file}: ${issues.join('; ')}`);
  }
  const checks = new Map<string, CheckDefinition>();
  const badName = Object.keys(parsed.data.checks).find((n) => !new RegExp(CHECK_NAME_PATTERN).test(n));
  if (badName !== undefined) {
    throw new Error(
      `${file}: checks.${JSON.stringify(badName)}: a check name is a-z, 0-9, _ . - (starting with a letter or digit, at most 64 characters)`,
    );
  }
  for (const [name, check] of Object.entries(parsed.data.checks)) {
    if ('command' in check) {
      if (check.cwd === 'directory' && check.directory === undefined) {
        throw new Error(`${file}: checks.${name}: cwd "directory" needs directory`);
      }
      checks.set(name, {
        ...check,
        ...(check.directory !== undefined ? { directory: resolve(baseDir, check.directory) } : {}),
        ...(check.roots_within !== undefined
          ? { roots_within: check.roots_within.map((d) => resolve(baseDir, d)) }
          : {}),
      });
    } else checks.set(name, check);
  }
  return checks;
}

/** What a check run produced: kept in telemetry and the step record, and shown to the agent on failure. */
export interface CheckResult {
  check: string;
  passed: boolean;
  /** The process's exit code (null when killed or never started); the HTTP status for an HTTP check. */
  exit_code: number | null;
  signal?: string | null;
  timed_out: boolean;
  duration_ms: number;
  /** Bytes of output the check wrote (stdout and stderr together). */
  output_bytes: number;
  truncated: boolean;
  /** The end of the output, secrets replaced by [hidden]. */
  tail: string;
  cwd?: string;
  /** Why it could not run at all (spawn failure, no working directory). */
  error?: string;
}

/** Runs checks for the execution service; canned results stand in for it in workflow tests. */
export interface CheckRunner {
  /** Throws check_unavailable when the check cannot run on this server. */
  available(name: string, where: { workflowId?: string; stepId?: string; executionId?: string }): void;
  /** Whether a workflow may name it (a check this server knows, enabled or not). */
  known(name: string): boolean;
  /** Whether checks are configured at all (a workflow naming one is then checked against them). */
  readonly configured: boolean;
  run(
    name: string,
    options: { roots?: readonly string[] | undefined; signal?: AbortSignal | undefined },
  ): Promise<CheckResult>;
}

const SECRET_ENV = /TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|PRIVATE_KEY/i;
/** Credential shapes in free text: bearer tokens, URL user info, JWT-like runs. */
const SECRET_SHAPES: readonly [RegExp, string][] = [
  [/(authorization:\s*(?:bearer|basic)\s+)[^\s]+/gi, '$1[hidden]'],
  [/(bearer\s+)[A-Za-z0-9._~+/=-]{12,}/gi, '$1[hidden]'],
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, '$1[hidden]@'],
  [/(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]{10,}){1,2}/g, '[hidden]'],
];

/** The tail of the output with the server's credential values and credential-shaped text replaced. */
export function scrubOutput(text: string, env: NodeJS.ProcessEnv): string {
  const secrets = Object.entries(env)
    .filter(([name, value]) => value !== undefined && value.length >= 8 && SECRET_ENV.test(name))
    .map(([, value]) => value as string);
  let out = new Scrubber(secrets, '[hidden]').text(text);
  for (const [shape, replacement] of SECRET_SHAPES) out = out.replace(shape, replacement);
  return out;
}

/** The last `max` bytes of what a stream wrote, and how much it wrote in all. */
class Tail {
  private chunks: Buffer[] = [];
  private held = 0;
  total = 0;

  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.total += chunk.length;
    this.chunks.push(chunk);
    this.held += chunk.length;
    // Drop whole chunks from the front while the rest still covers `max`: memory stays bounded.
    while (this.chunks.length > 1 && this.held - (this.chunks[0]?.length ?? 0) >= this.max) {
      this.held -= this.chunks.shift()?.length ?? 0;
    }
  }

  text(): string {
    const all = Buffer.concat(this.chunks);
    const kept = all.length > this.max ? all.subarray(all.length - this.max) : all;
    // A cut through a multi-byte character leaves U+FFFD at the start, which is harmless.
    return kept.toString('utf8');
  }
}

/** A directory from a `file://` root, if it is one that exists. */
function rootDirectory(uri: string): string | undefined {
  try {
    if (!uri.startsWith('file://')) return undefined;
    const dir = realpathSync(fileURLToPath(uri));
    return statSync(dir).isDirectory() ? dir : undefined;
  } catch {
    return undefined;
  }
}

function inside(dir: string, base: string): boolean {
  const rel = relative(base, dir);
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !isAbsolute(rel));
}

/** The working directory of a command check: the client's first acceptable root, else the configured one. */
export function workingDirectory(
  check: CommandCheck,
  roots: readonly string[] | undefined,
): string | undefined {
  if (check.cwd === 'roots') {
    for (const uri of roots ?? []) {
      const dir = rootDirectory(uri);
      if (dir === undefined) continue;
      const within = check.roots_within;
      if (within === undefined || within.some((base) => inside(dir, realpathOr(base)))) return dir;
    }
  }
  return check.directory;
}

function realpathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Runs a command check: no shell (arguments are passed as they are), its own process group (so a
 * timeout kills whatever it started too), only the allowed environment variables, output capped.
 */
export function runCommandCheck(
  name: string,
  check: CommandCheck,
  cwd: string,
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
): Promise<CheckResult> {
  const started = Date.now();
  const childEnv: Record<string, string> = {};
  for (const key of check.env) {
    const value = env[key];
    if (value !== undefined) childEnv[key] = value;
  }
  const tail = new Tail(check.max_output);
  const timeoutMs = durationMs(check.timeout, CHECK_LIMITS.defaultTimeoutMs);
  return new Promise((done) => {
    let timedOut = false;
    let settled = false;
    const finish = (
      result: Omit<
        CheckResult,
        'check' | 'duration_ms' | 'output_bytes' | 'truncated' | 'tail' | 'timed_out' | 'cwd'
      >,
    ) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(killer);
      signal?.removeEventListener('abort', aborted);
      done({
        check: name,
        ...result,
        timed_out: timedOut,
        duration_ms: Date.now() - started,
        output_bytes: tail.total,
        truncated: tail.total > check.max_output,
        tail: scrubOutput(tail.text(), env),
        cwd,
      });
    };
    let killer: NodeJS.Timeout | undefined;
    const killGroup = (sig: NodeJS.Signals) => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, sig);
      } catch {
        // already gone
      }
    };
    const stop = () => {
      killGroup('SIGTERM');
      killer = setTimeout(() => killGroup('SIGKILL'), CHECK_LIMITS.killGraceMs);
      killer.unref();
    };
    const child = spawn(check.command, check.args, {
      cwd,
      env: childEnv,
      shell: false,
      detached: true,
      stdio: ['ignore', 'pipe', 'pipe'],
      windowsHide: true,
    });
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeoutMs);
    timer.unref();
    const aborted = () => stop();
    signal?.addEventListener('abort', aborted, { once: true });
    child.stdout?.on('data', (chunk: Buffer) => tail.push(chunk));
    child.stderr?.on('data', (chunk: Buffer) => tail.push(chunk));
    child.on('error', (error) =>
      finish({
        passed: false,
        exit_code: null,
        signal: null,
        error: `cannot run ${check.command}: ${error.message}`,
      }),
    );
    child.on('close', (code, sig) => {
      // The group may have left children behind that hold no pipe: end them with the check.
      if (timedOut) killGroup('SIGKILL');
      finish({ passed: code === 0 && !timedOut, exit_code: code, signal: sig });
    });
  });
}

/** The configured checks, run as configured (see CheckRunner). */
export class ConfiguredChecks implements CheckRunner {
  constructor(
    private readonly config: ChecksConfig | undefined,
    private readonly deps: {
      env: NodeJS.ProcessEnv;
      commands?: Pick<CommandStepRunner, 'run'> | undefined;
    },
  ) {}

  get configured(): boolean {
    return this.config !== undefined;
  }

  known(name: string): boolean {
    return this.config?.checks.has(name) === true;
  }

  available(name: string, where: { workflowId?: string; stepId?: string; executionId?: string }): void {
    const at = Object.fromEntries(Object.entries(where).filter(([, v]) => v !== undefined));
    const refuse = (
      reason: 'not_configured' | 'disabled' | 'http_not_allowed' | 'unknown',
      why: string,
    ): never =>
      fail({ code: 'check_unavailable', message: `check "${name}" ${why}`, check: name, reason, ...at });
    const config = this.config;
    if (config === undefined) {
      refuse(
        'not_configured',
        'is not available: this server has no checks (WORKFLOWLOOKUP_CHECKS_FILE is unset)',
      );
      return;
    }
    const check = config.checks.get(name);
    if (check === undefined) {
      refuse('unknown', `is not defined in ${config.file}`);
      return;
    }
    if (!check.enabled) refuse('disabled', `is disabled in ${config.file}`);
    if (!config.allowed)
      refuse(
        'http_not_allowed',
        'is not run by this HTTP server: checks run over HTTP only with WORKFLOWLOOKUP_HTTP_CHECKS=1',
      );
  }

  /**
   * One span per run: the check's name, kind, outcome and duration; never its output, command line,
   * working directory or environment (they may hold what the operator keeps private).
   */
  run(
    name: string,
    options: { roots?: readonly string[] | undefined; signal?: AbortSignal | undefined },
  ): Promise<CheckResult> {
    const definition = this.config?.checks.get(name);
    const kind = definition === undefined ? undefined : 'http' in definition ? 'http' : 'command';
    return inSpan(
      `check ${name}`,
      { [ATTR.check]: name, 'workflowlookup.check.kind': kind },
      async (span) => {
        const result = await this.runUntraced(name, options);
        if (span !== undefined) {
          span.setAttributes({
            'workflowlookup.check.passed': result.passed,
            'workflowlookup.check.timed_out': result.timed_out,
            'workflowlookup.check.duration_ms': result.duration_ms,
            ...(result.exit_code !== null
              ? { [kind === 'http' ? 'http.response.status_code' : 'process.exit.code']: result.exit_code }
              : {}),
            ...(result.signal ? { 'workflowlookup.check.signal': result.signal } : {}),
          });
          // A failing check is an answer; one that could not run, or ran out of time, is an error.
          if (result.error !== undefined || result.timed_out)
            span.setStatus({ code: 2, message: result.timed_out ? 'timed out' : 'could not run' });
        }
        return result;
      },
    );
  }

  private async runUntraced(
    name: string,
    options: { roots?: readonly string[] | undefined; signal?: AbortSignal | undefined },
  ): Promise<CheckResult> {
    this.available(name, {});
    const check = this.config?.checks.get(name) as CheckDefinition;
    if ('http' in check) return this.runHttp(name, check, options.signal);
    const cwd = workingDirectory(check, options.roots);
    if (cwd === undefined) {
      return {
        check: name,
        passed: false,
        exit_code: null,
        timed_out: false,
        duration_ms: 0,
        output_bytes: 0,
        truncated: false,
        tail: '',
        error: 'no working directory: the client sent no usable root and the check configures no directory',
      };
    }
    return runCommandCheck(name, check, cwd, this.deps.env, options.signal);
  }

  private async runHttp(name: string, check: HttpCheck, signal?: AbortSignal): Promise<CheckResult> {
    const started = Date.now();
    const base = { check: name, timed_out: false, truncated: false, output_bytes: 0 };
    if (this.deps.commands === undefined) {
      return {
        ...base,
        passed: false,
        exit_code: null,
        duration_ms: 0,
        tail: '',
        error: 'no catalogs are configured',
      };
    }
    const step = {
      id: `check-${name.replace(/[^a-z0-9_-]/g, '-')}`,
      title: `check ${name}`,
      run: check.http.run,
      ...(check.http.with !== undefined ? { with: check.http.with } : {}),
      ...(check.http.body !== undefined ? { body: check.http.body } : {}),
      ...(check.timeout !== undefined ? { timeout: check.timeout } : {}),
    } as CommandStep;
    try {
      const result = await this.deps.commands.run(step, contextScope({}), `check:${name}:${started}`, {
        ...(signal ? { signal } : {}),
      });
      const text = typeof result.output === 'string' ? result.output : JSON.stringify(result.output ?? null);
      const bytes = Buffer.byteLength(text);
      const max = CHECK_LIMITS.defaultMaxOutput;
      return {
        ...base,
        passed: result.status >= 200 && result.status < 300,
        exit_code: result.status,
        duration_ms: Date.now() - started,
        output_bytes: bytes,
        truncated: bytes > max,
        tail: scrubOutput(
          Buffer.from(text)
            .subarray(Math.max(0, bytes - max))
            .toString('utf8'),
          this.deps.env,
        ),
      };
    } catch (error) {
      const domain =
        error instanceof DomainFailure && error.error.code === 'command_failed' ? error.error : undefined;
      return {
        ...base,
        passed: false,
        exit_code: domain?.status ?? null,
        timed_out: domain?.reason === 'timeout',
        duration_ms: Date.now() - started,
        tail: scrubOutput(domain?.message ?? (error as Error).message, this.deps.env),
        error: domain?.message ?? (error as Error).message,
      };
    }
  }
}
