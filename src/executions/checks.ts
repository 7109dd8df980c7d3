// Checks the server runs itself when an agent submits a step that names one (`verify: {check}`): the
// operator defines them (WORKFLOWLOOKUP_CHECKS_FILE); a workflow only names one, and neither the
// workflow nor the agent ever supplies a command, an argument, a path or an environment variable.
import { spawn } from 'node:child_process';
import { readFileSync, realpathSync, statSync } from 'node:fs';
import { dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import * as z from 'zod';
import { type CommandStepRunner, durationMs } from '../catalogs/command-steps.js';
import { Scrubber, STATIC_TOKEN_SHAPE } from '../catalogs/credentials.js';
import { DomainFailure, fail } from '../engine/errors.js';
import { contextScope } from '../engine/guidance.js';
import { terminalSafe } from '../engine/terminal-text.js';
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
  run(name: string, options: CheckRunOptions): Promise<CheckResult>;
}

export interface CheckRunOptions {
  /** The client's MCP roots (`file://` URIs), for a check whose working directory comes from them. */
  roots?: readonly string[] | undefined;
  /** Stops the run (and takes it out of the queue while it waits for a slot). */
  signal?: AbortSignal | undefined;
  /** Who submitted: checks run at most `maxPerPrincipal` at a time for each. */
  principal?: string | undefined;
}

const SECRET_ENV = /TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|CREDENTIAL|PRIVATE_KEY/i;
/** Credential shapes in free text: bearer tokens, URL user info, JWT-like runs, this server's tokens. */
const SECRET_SHAPES: readonly [RegExp, string][] = [
  [/(authorization:\s*(?:bearer|basic)\s+)[^\s]+/gi, '$1[hidden]'],
  [/(bearer\s+)[A-Za-z0-9._~+/=-]{12,}/gi, '$1[hidden]'],
  [/(\b[a-z][a-z0-9+.-]*:\/\/[^\s:/@]+:)[^\s@/]+@/gi, '$1[hidden]@'],
  [/(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{10,}(?:\.[A-Za-z0-9_-]{10,}){1,2}/g, '[hidden]'],
  [STATIC_TOKEN_SHAPE, '[hidden]'],
];

/**
 * Output made fit to show (to the agent, in telemetry, on the dashboard): terminal control sequences
 * and bidirectional controls removed (terminal-text.ts), then the values of the server's
 * credential-like variables and the other `secrets` (the data dir's token secret) replaced in every
 * form the Scrubber knows, and credential-shaped text too. Controls go first, so a secret split by a
 * colour code is whole again when the scrubber looks for it.
 */
export function scrubOutput(text: string, env: NodeJS.ProcessEnv, secrets: readonly string[] = []): string {
  const known = Object.entries(env)
    .filter(([name, value]) => value !== undefined && value.length >= 8 && SECRET_ENV.test(name))
    .map(([, value]) => value as string);
  let out = new Scrubber([...known, ...secrets.filter((s) => s.length >= 8)], '[hidden]').text(
    terminalSafe(text),
  );
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

/**
 * workflowlookup's own package directory (where this module lies: dist/ or src/ of an installed package or
 * a clone), found once. A check that would run there tests this server, not the user's project: the
 * examples' checks file lies in it, and `npm test` there walks up to the package's own package.json.
 */
let ownPackage: string | null | undefined;
function ownPackageDir(): string | undefined {
  if (ownPackage === undefined) {
    ownPackage = null;
    for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
      try {
        const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown };
        if (manifest.name === 'workflowlookup') {
          ownPackage = realpathOr(dir);
          break;
        }
      } catch {
        // no package.json here: keep walking up
      }
      if (dirname(dir) === dir) break;
    }
  }
  return ownPackage ?? undefined;
}

/**
 * Why a command check has no usable working directory, naming the setting that gives it one: the agent
 * can fix none of this, and a tool's own error from the wrong directory (`biome: not found`) would read
 * as something to fix in the work.
 */
export function workingDirectoryProblem(
  name: string,
  check: CommandCheck,
  cwd: string | undefined,
  roots: readonly string[] | undefined,
  file: string,
): string | undefined {
  const where = `checks.${name} in ${file}`;
  const noRoots =
    check.cwd === 'roots'
      ? (roots ?? []).length === 0
        ? 'the client declared no MCP roots'
        : 'no MCP root the client declared is usable here'
      : undefined;
  if (cwd === undefined)
    return `no working directory: ${noRoots ?? 'none is configured'} and ${where} sets no \`directory\`; the operator sets \`directory\` to the project to check${noRoots === undefined ? '' : ', or uses a client that declares its roots'}`;
  const own = ownPackageDir();
  if (own !== undefined && inside(realpathOr(cwd), own))
    return `not a project: the working directory ${cwd} (${noRoots !== undefined ? `${where}'s \`directory\`, as ${noRoots}` : `${where}'s \`directory\``}) is inside workflowlookup's own package; the operator sets \`directory\` to the project to check${noRoots === undefined ? '' : ', or uses a client that declares its roots'}`;
  return undefined;
}

function realpathOr(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return path;
  }
}

/**
 * Runs a command check: no shell (arguments are passed as they are), its own process group, only the
 * allowed environment variables, output capped. The group ends with the check, whatever its result:
 * when the command exits (or times out, or the run is aborted) the group gets SIGTERM, then SIGKILL
 * after the grace period if anything is left, so nothing a check started in the background keeps
 * running after it. A descendant that left the group (setsid, a daemon) is not tracked.
 */
export function runCommandCheck(
  name: string,
  check: CommandCheck,
  cwd: string,
  env: NodeJS.ProcessEnv,
  signal?: AbortSignal,
  secrets: readonly string[] = [],
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
    /** How the command itself ended ('exit'), before its output pipes closed ('close'). */
    let exited: { code: number | null; signal: NodeJS.Signals | null } | undefined;
    const finish = (
      result: Omit<
        CheckResult,
        'check' | 'duration_ms' | 'output_bytes' | 'truncated' | 'tail' | 'timed_out' | 'cwd'
      >,
    ) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', aborted);
      // The SIGKILL still due stays due while the group has members (one may be ignoring SIGTERM).
      if (!groupAlive()) clearTimeout(killer);
      done({
        check: name,
        ...result,
        timed_out: timedOut,
        duration_ms: Date.now() - started,
        output_bytes: tail.total,
        truncated: tail.total > check.max_output,
        tail: scrubOutput(tail.text(), env, secrets),
        cwd,
      });
    };
    const settleFromExit = () =>
      finish({
        passed: exited?.code === 0 && !timedOut,
        exit_code: exited?.code ?? null,
        signal: exited?.signal ?? null,
      });
    let killer: NodeJS.Timeout | undefined;
    const killGroup = (sig: NodeJS.Signals | 0): boolean => {
      if (child.pid === undefined) return false;
      try {
        process.kill(-child.pid, sig);
        return true;
      } catch {
        return false; // the group is gone
      }
    };
    const groupAlive = () => killGroup(0);
    let ending = false;
    /** SIGTERM to the group now, SIGKILL after the grace period; then stop waiting for the output. */
    const endGroup = () => {
      if (ending) return;
      ending = true;
      killGroup('SIGTERM');
      killer = setTimeout(() => {
        killGroup('SIGKILL');
        // Output pipes still open now are held by something outside the group (setsid): the check
        // is over all the same.
        child.stdout?.destroy();
        child.stderr?.destroy();
        settleFromExit();
      }, CHECK_LIMITS.killGraceMs);
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
      endGroup();
    }, timeoutMs);
    timer.unref();
    const aborted = () => endGroup();
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
    child.on('exit', (code, sig) => {
      exited = { code, signal: sig };
      // The command is done: what it left running in its group ends now, passed or not. Its output
      // already written stays readable in the pipes until 'close'.
      endGroup();
    });
    child.on('close', (code, sig) => {
      exited ??= { code, signal: sig };
      // A timed-out group had its SIGTERM: what is still there gets no grace.
      if (timedOut) killGroup('SIGKILL');
      settleFromExit();
    });
  });
}

/** How many checks run at once, in total and per principal, and how many may wait for a slot. */
export interface CheckSlotLimits {
  /** Checks running at once on this server (WORKFLOWLOOKUP_CHECKS_MAX_CONCURRENT). */
  maxConcurrent: number;
  /** Checks of one principal running at once (WORKFLOWLOOKUP_CHECKS_MAX_PER_PRINCIPAL). */
  maxPerPrincipal: number;
  /** Runs waiting for a slot, over all principals; one more is refused (WORKFLOWLOOKUP_CHECKS_MAX_QUEUED). */
  maxQueued: number;
}

interface Waiter {
  grant(): void;
}

/**
 * The slots checks run in. A run that finds none free waits in line rather than fail: one line per
 * principal (first come, first served), and a free slot goes to the waiting principal served longest
 * ago, so one principal's burst cannot keep another's single check waiting behind all of it. Past
 * `maxQueued` waiting runs a run is refused with check_busy (retryable). A waiting run whose signal
 * aborts leaves the line.
 */
export class CheckSlots {
  private running = 0;
  private readonly runningOf = new Map<string, number>();
  /** Waiting runs by principal, oldest first; a principal is here only while it has some. */
  private readonly lines = new Map<string, Waiter[]>();
  private waiting = 0;
  /** When each principal active now was last given a slot (a counter, not a time). */
  private readonly servedAt = new Map<string, number>();
  private turn = 0;

  constructor(readonly limits: CheckSlotLimits) {}

  /** Runs in a slot now and waiting for one (for tests and messages). */
  get counts(): { running: number; waiting: number } {
    return { running: this.running, waiting: this.waiting };
  }

  /**
   * A slot for one run of `check` by `principal`: at once when one is free, else after waiting in line.
   * Resolves to the function that gives it back (call it once the run is over, whatever its result).
   */
  acquire(
    check: string,
    principal: string,
    options: { signal?: AbortSignal | undefined; retryAfterMs?: number | undefined } = {},
  ): Promise<() => void> {
    const { signal } = options;
    if (signal?.aborted) return Promise.reject(signal.reason);
    // Slots are handed out as soon as one frees, so a free slot now means every waiting run is held
    // back by its principal's own limit: taking it skips nobody.
    if (!this.lines.has(principal) && this.free(principal)) return Promise.resolve(this.take(principal));
    if (this.waiting >= this.limits.maxQueued) {
      const { maxConcurrent, maxQueued } = this.limits;
      const busy = new DomainFailure({
        code: 'check_busy',
        message: `check "${check}" cannot run now: ${this.running} checks are running (at most ${maxConcurrent} at once) and ${this.waiting} are waiting, the most this server queues (WORKFLOWLOOKUP_CHECKS_MAX_QUEUED=${maxQueued}); nothing advanced`,
        check,
        ...(principal !== '' ? { principal } : {}),
        limit: maxQueued,
        ...(options.retryAfterMs !== undefined ? { retryAfterMs: options.retryAfterMs } : {}),
      });
      return Promise.reject(busy);
    }
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        grant: () => {
          signal?.removeEventListener('abort', leave);
          resolve(this.take(principal));
        },
      };
      const leave = () => {
        const line = this.lines.get(principal);
        const at = line?.indexOf(waiter) ?? -1;
        if (line === undefined || at < 0) return;
        line.splice(at, 1);
        this.waiting--;
        if (line.length === 0) this.lines.delete(principal);
        this.forget(principal);
        reject(signal?.reason);
      };
      const line = this.lines.get(principal);
      if (line === undefined) this.lines.set(principal, [waiter]);
      else line.push(waiter);
      this.waiting++;
      signal?.addEventListener('abort', leave, { once: true });
    });
  }

  private free(principal: string): boolean {
    return (
      this.running < this.limits.maxConcurrent &&
      (this.runningOf.get(principal) ?? 0) < this.limits.maxPerPrincipal
    );
  }

  private take(principal: string): () => void {
    this.running++;
    this.runningOf.set(principal, (this.runningOf.get(principal) ?? 0) + 1);
    this.servedAt.set(principal, ++this.turn);
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.running--;
      const left = (this.runningOf.get(principal) ?? 1) - 1;
      if (left > 0) this.runningOf.set(principal, left);
      else this.runningOf.delete(principal);
      this.forget(principal);
      this.dispatch();
    };
  }

  /** Drops what is kept of a principal with nothing running or waiting (memory stays bounded). */
  private forget(principal: string): void {
    if (!this.runningOf.has(principal) && !this.lines.has(principal)) this.servedAt.delete(principal);
  }

  /** Gives free slots to waiting runs: the principal served longest ago first, its oldest run first. */
  private dispatch(): void {
    while (this.running < this.limits.maxConcurrent) {
      let chosen: string | undefined;
      let oldest = Number.POSITIVE_INFINITY;
      for (const principal of this.lines.keys()) {
        if ((this.runningOf.get(principal) ?? 0) >= this.limits.maxPerPrincipal) continue;
        // Never served (or not since it was last idle) comes first; ties go to the line made first.
        const at = this.servedAt.get(principal) ?? 0;
        if (at < oldest) {
          oldest = at;
          chosen = principal;
        }
      }
      if (chosen === undefined) return;
      const line = this.lines.get(chosen) as Waiter[];
      const waiter = line.shift() as Waiter;
      if (line.length === 0) this.lines.delete(chosen);
      this.waiting--;
      waiter.grant();
    }
  }
}

/** The configured checks, run as configured (see CheckRunner). */
export class ConfiguredChecks implements CheckRunner {
  private readonly slots: CheckSlots;
  /** How long the last run of each check took: the hint a check_busy refusal gives. */
  private readonly lastDurationMs = new Map<string, number>();

  constructor(
    private readonly config: ChecksConfig | undefined,
    private readonly deps: {
      env: NodeJS.ProcessEnv;
      commands?: Pick<CommandStepRunner, 'run'> | undefined;
      /** Values to hide in output besides the environment's credentials (the data dir's token secret). */
      secrets?: readonly string[] | undefined;
      /** How many checks run at once (command and HTTP checks alike). */
      limits: CheckSlotLimits;
    },
  ) {
    this.slots = new CheckSlots(deps.limits);
  }

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
  run(name: string, options: CheckRunOptions): Promise<CheckResult> {
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

  private async runUntraced(name: string, options: CheckRunOptions): Promise<CheckResult> {
    this.available(name, {});
    const last = this.lastDurationMs.get(name);
    const release = await this.slots.acquire(name, options.principal ?? '', {
      signal: options.signal,
      retryAfterMs: last === undefined ? undefined : Math.max(1000, last),
    });
    try {
      const result = await this.runInSlot(name, options);
      this.lastDurationMs.set(name, result.duration_ms);
      return result;
    } finally {
      release();
    }
  }

  private async runInSlot(name: string, options: CheckRunOptions): Promise<CheckResult> {
    const check = this.config?.checks.get(name) as CheckDefinition;
    if ('http' in check) return this.runHttp(name, check, options.signal);
    const cwd = workingDirectory(check, options.roots);
    const problem = workingDirectoryProblem(
      name,
      check,
      cwd,
      options.roots,
      this.config?.file ?? 'the checks file',
    );
    if (cwd === undefined || problem !== undefined) {
      return {
        check: name,
        passed: false,
        exit_code: null,
        timed_out: false,
        duration_ms: 0,
        output_bytes: 0,
        truncated: false,
        tail: '',
        ...(cwd !== undefined ? { cwd } : {}),
        error: problem ?? 'no working directory',
      };
    }
    return runCommandCheck(name, check, cwd, this.deps.env, options.signal, this.deps.secrets);
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
          this.deps.secrets,
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
        tail: scrubOutput(domain?.message ?? (error as Error).message, this.deps.env, this.deps.secrets),
        error: scrubOutput(domain?.message ?? (error as Error).message, this.deps.env, this.deps.secrets),
      };
    }
  }
}
