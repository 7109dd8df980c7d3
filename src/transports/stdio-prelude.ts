import { readFileSync } from 'node:fs';

/**
 * The answers to `initialize` and `tools/list` the SDK gives, recorded at build time for each tool
 * profile and protocol version (scripts/build.mjs runs src/cli/prelude-answers.ts; a test compares
 * them with what the server answers without the prelude).
 */
export interface PreludeAnswers {
  /** Every distinct result, referred to by index below. */
  results: unknown[];
  /** Profiles key ("core", "authoring", ..., or "all") → protocol version → result. */
  initialize: Record<string, Record<string, number>>;
  /** Profiles key → protocol version → `plain` (no MCP Apps extension declared) or `apps` → result. */
  tools: Record<string, Record<string, { plain: number; apps: number }>>;
}

/** What the prelude read and answered, for the real server to take over from. */
export interface PreludeHandoff {
  /** Every byte read so far that the server still has to process, in order. */
  replay: Buffer;
  /** Input ended while the prelude was listening. */
  ended: boolean;
  /** Replayed requests whose answers were already written (their answers are dropped). */
  answered: ReadonlySet<string | number>;
}

type Json = Record<string, unknown>;

/** Client capabilities the recorded answers cover; any other makes the server answer itself. */
const KNOWN_CAPABILITIES = new Set(['roots', 'sampling', 'elicitation', 'extensions']);
const APPS_EXTENSION = 'io.modelcontextprotocol/ui';

/** The id under which the answered `initialize` is replayed (the client's id may be reused at once). */
export const PRELUDE_INITIALIZE_ID = '\u0000prelude-initialize';

/**
 * Answers the first requests of a stdio client (`initialize`, then `tools/list` and `ping`) from the
 * recorded answers while the server itself is still loading, so what a client waits for at start is
 * close to a bare Node process. It only takes the plain path: the first line it cannot answer exactly
 * as the server would (anything else, anything unusual) ends it, and everything from that line on is
 * handed over unread. The server then replays `initialize` so that the SDK knows the client.
 */
export class StdioPrelude {
  private chunks: Buffer[] = [];
  private pending = Buffer.alloc(0);
  private initialize: Json | undefined;
  private answered = new Set<string | number>();
  private ended = false;
  private done = false;
  private profiles: string;
  /** Called when the server should start loading now (it does not wait for this). */
  onBusy: (() => void) | undefined;

  constructor(
    private readonly answers: PreludeAnswers,
    profiles: string,
    private readonly stdin: NodeJS.ReadStream = process.stdin,
    private readonly stdout: NodeJS.WriteStream = process.stdout,
  ) {
    this.profiles = profiles;
    stdin.on('data', this.onData);
    stdin.on('end', this.onEnd);
  }

  /** Stops listening, so that a server that failed to start lets the process end. */
  close(): void {
    this.finish();
    this.stdin.off('data', this.onData);
    this.stdin.off('end', this.onEnd);
    this.stdin.pause();
  }

  /** Stops answering; the server processes what was read (and reads on from the stream itself). */
  handoff(): PreludeHandoff {
    this.close();
    const lines = this.initialize ? [Buffer.from(`${JSON.stringify(this.initialize)}\n`)] : [];
    return {
      replay: Buffer.concat([...lines, ...this.chunks, this.pending]),
      ended: this.ended,
      answered: new Set(this.initialize ? [PRELUDE_INITIALIZE_ID] : []),
    };
  }

  private finish(): void {
    if (this.done) return;
    this.done = true;
    this.onBusy?.();
  }

  private readonly onEnd = () => {
    this.ended = true;
    this.finish();
  };

  private readonly onData = (chunk: Buffer | string) => {
    const data = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    if (this.done) {
      this.chunks.push(data);
      return;
    }
    let buffer = this.pending.length > 0 ? Buffer.concat([this.pending, data]) : data;
    for (let nl = buffer.indexOf(10); nl !== -1 && !this.done; nl = buffer.indexOf(10)) {
      const line = buffer.subarray(0, nl + 1);
      if (!this.take(line)) {
        this.finish();
        break;
      }
      buffer = buffer.subarray(nl + 1);
    }
    // `buffer` began with what was pending: handed over once, never again at the end of the replay
    // (which made a long line that arrived in pieces end the next request's line on the server's side).
    if (this.done) {
      this.chunks.push(Buffer.from(buffer));
      this.pending = Buffer.alloc(0);
    } else this.pending = Buffer.from(buffer);
  };

  /** Answers one line if it is on the plain path; false hands it (and the rest) over. */
  private take(line: Buffer): boolean {
    if (line.length > 65_536) return false;
    let msg: Json;
    try {
      msg = JSON.parse(line.toString('utf8')) as Json;
    } catch {
      return false;
    }
    if (msg === null || typeof msg !== 'object' || Array.isArray(msg) || msg.jsonrpc !== '2.0') return false;
    const keys = Object.keys(msg);
    const id = msg.id;
    const usableId = typeof id === 'string' || (typeof id === 'number' && Number.isSafeInteger(id));
    const params = msg.params;
    if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params)))
      return false;
    const p = (params ?? {}) as Json;
    if (this.initialize === undefined) {
      if (
        msg.method !== 'initialize' ||
        !usableId ||
        keys.some((k) => !['jsonrpc', 'id', 'method', 'params'].includes(k))
      )
        return false;
      const result = this.initializeAnswer(p);
      if (result === undefined) return false;
      this.initialize = { ...msg, id: PRELUDE_INITIALIZE_ID };
      this.write(id as string | number, result);
      return true;
    }
    if (msg.method === 'notifications/initialized' && id === undefined && Object.keys(p).length === 0) {
      this.chunks.push(Buffer.from(line));
      return true;
    }
    if (!usableId || id === PRELUDE_INITIALIZE_ID || Object.keys(p).length > 0) return false;
    if (msg.method === 'ping') {
      this.write(id as string | number, {});
      return true;
    }
    if (msg.method !== 'tools/list') return false;
    const { capabilities, protocolVersion } = this.initialize.params as Json;
    const extensions = (capabilities as Json).extensions as Json | undefined;
    const listed = this.answers.tools[this.profiles]?.[protocolVersion as string];
    if (listed === undefined) return false;
    const index = extensions?.[APPS_EXTENSION] !== undefined ? listed.apps : listed.plain;
    this.write(id as string | number, this.answers.results[index]);
    // The client has what it asks for at start: the server loads now.
    this.finish();
    return true;
  }

  private initializeAnswer(params: Json): unknown {
    const { protocolVersion, capabilities, clientInfo, _meta } = params;
    if (_meta !== undefined || typeof protocolVersion !== 'string') return undefined;
    if (Object.keys(params).some((k) => !['protocolVersion', 'capabilities', 'clientInfo'].includes(k)))
      return undefined;
    if (capabilities === null || typeof capabilities !== 'object' || Array.isArray(capabilities))
      return undefined;
    if (Object.keys(capabilities).some((k) => !KNOWN_CAPABILITIES.has(k))) return undefined;
    const extensions = (capabilities as Json).extensions;
    if (
      extensions !== undefined &&
      (extensions === null ||
        typeof extensions !== 'object' ||
        Object.keys(extensions).some((k) => k !== APPS_EXTENSION))
    )
      return undefined;
    if (
      clientInfo === null ||
      typeof clientInfo !== 'object' ||
      typeof (clientInfo as Json).name !== 'string' ||
      typeof (clientInfo as Json).version !== 'string'
    )
      return undefined;
    const index = this.answers.initialize[this.profiles]?.[protocolVersion];
    return index === undefined ? undefined : this.answers.results[index];
  }

  private write(id: string | number, result: unknown): void {
    this.answered.add(id);
    this.stdout.write(`${JSON.stringify({ result, jsonrpc: '2.0', id })}\n`);
  }
}

/**
 * The prelude for this launch, or undefined when the server must answer everything itself: not a
 * plain stdio `serve`, a terminal on stdin, no recorded answers, or a tool profile they do not cover.
 */
export function startPrelude(
  argv: readonly string[],
  env: NodeJS.ProcessEnv,
  answersFile: URL,
): StdioPrelude | undefined {
  if (process.stdin.isTTY) return undefined;
  const args = argv[0] === 'serve' ? argv.slice(1) : [...argv];
  let tools = env.WORKFLOWLOOKUP_TOOLS;
  if (args.length === 2 && args[0] === '--tools') tools = args[1];
  else if (args.length === 1 && args[0]?.startsWith('--tools=')) tools = args[0].slice('--tools='.length);
  else if (args.length !== 0) return undefined;
  let answers: PreludeAnswers;
  try {
    answers = JSON.parse(readFileSync(answersFile, 'utf8')) as PreludeAnswers;
  } catch {
    return undefined;
  }
  const key = profilesKey(tools);
  if (answers.tools[key] === undefined) return undefined;
  return new StdioPrelude(answers, key);
}

/**
 * The recorded-answers key of a WORKFLOWLOOKUP_TOOLS / --tools value, as config.ts parses it: `all`, or
 * the groups listed (`core` always among them), sorted.
 */
export function profilesKey(value: string | undefined): string {
  const names = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  if (names.includes('all')) return 'all';
  return [...new Set(['core', ...names])].sort().join(',');
}
