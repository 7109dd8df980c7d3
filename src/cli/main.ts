// The command line: parses the arguments against the command table (commands.ts), runs the command
// (each job in a file of its own beside this one) and maps what it ends with to an exit code.
import { parseArgs } from 'node:util';
import { ConfigError, type ConfigOptions, ENVIRONMENT, loadConfig } from '../config.js';
import { workflowJsonSchema } from '../model/workflow.js';
import { StoreFileError } from '../store/sqlite/sqlite-file.js';
import type { StdioPrelude } from '../transports/stdio-prelude.js';
import { approvalsCommand, decideCommand } from './approvals-command.js';
import { COMMAND_SPECS, type CommandSpec, optionLines, TITLE } from './commands.js';
import { keysCommand, recordCommand, verifyCommand } from './record-commands.js';
import { dashboard, serve } from './serve-commands.js';
import { exportCommand, importCommand, migrateCommand } from './store-commands.js';
import { testCommand } from './test-command.js';
import { token } from './token-command.js';
import { type Flags, UsageError } from './usage.js';
import { init, list, sources, validateFiles } from './workflow-commands.js';

/** The stdio prelude that answered the client while this module loaded (entry.ts), if any. */
let prelude: StdioPrelude | undefined;

// -------------------------------------------------------------------------------------------------
// Commands and options: one table, from which parsing and every --help text are made.

interface Command extends CommandSpec {
  run: (rest: string[], options: ConfigOptions, flags: Flags) => Promise<number> | number;
}

const COMMANDS: Record<string, Command> = {
  serve: { ...COMMAND_SPECS.serve, run: (_rest, options, flags) => serve(options, flags, prelude) },
  dashboard: { ...COMMAND_SPECS.dashboard, run: (_rest, options, flags) => dashboard(options, flags) },
  list: { ...COMMAND_SPECS.list, run: (_rest, options, flags) => list(options, flags.json === true) },
  validate: {
    ...COMMAND_SPECS.validate,
    run: (rest, options, flags) => validateFiles(rest, options, flags.json === true),
  },
  test: {
    ...COMMAND_SPECS.test,
    run: (rest, options, flags) => testCommand(rest, options, flags.json === true),
  },
  init: { ...COMMAND_SPECS.init, run: () => init() },
  sources: {
    ...COMMAND_SPECS.sources,
    run: (rest, options, flags) => sources(options, rest, flags.json === true),
  },
  schema: {
    ...COMMAND_SPECS.schema,
    run: () => {
      process.stdout.write(`${JSON.stringify(workflowJsonSchema(), null, 2)}\n`);
      return 0;
    },
  },
  migrate: { ...COMMAND_SPECS.migrate, run: (_rest, options, flags) => migrateCommand(options, flags) },
  export: { ...COMMAND_SPECS.export, run: (_rest, options, flags) => exportCommand(options, flags) },
  import: { ...COMMAND_SPECS.import, run: (rest, options, flags) => importCommand(rest, options, flags) },
  approvals: {
    ...COMMAND_SPECS.approvals,
    run: (_rest, options, flags) => approvalsCommand(options, flags.json === true),
  },
  approve: {
    ...COMMAND_SPECS.approve,
    run: (rest, options, flags) => decideCommand('approve', rest, options, flags.reason),
  },
  reject: {
    ...COMMAND_SPECS.reject,
    run: (rest, options, flags) => decideCommand('reject', rest, options, flags.reason),
  },
  record: { ...COMMAND_SPECS.record, run: (rest, options, flags) => recordCommand(rest, options, flags) },
  verify: { ...COMMAND_SPECS.verify, run: (rest, options, flags) => verifyCommand(rest, options, flags) },
  keys: { ...COMMAND_SPECS.keys, run: (rest, options) => keysCommand(rest, options) },
  token: { ...COMMAND_SPECS.token, run: (rest, options, flags) => token(rest, options, flags) },
};

function mainHelp(): string {
  const width = Math.max(...Object.values(COMMANDS).map((c) => c.usage.length));
  return [
    TITLE,
    '',
    'Usage: workflowlookup [command] [options]   (the command defaults to serve)',
    '',
    'Commands:',
    ...Object.values(COMMANDS).map((c) => `  ${c.usage.padEnd(Math.min(width, 40))}  ${c.summary}`),
    '  --help | --version',
    '',
    'Run `workflowlookup <command> --help` for its options.',
    '',
    'Environment:',
    ...ENVIRONMENT.map((e) => `  ${e.name}\n      ${e.description.replaceAll('`', '')}`),
  ].join('\n');
}

function commandHelp(command: Command): string {
  const options = optionLines(command.options);
  return [
    `Usage: workflowlookup ${command.usage}`,
    '',
    command.summary,
    ...(options.length > 0 ? ['', 'Options:', ...options] : []),
  ].join('\n');
}

/**
 * node:util's parseArgs error in our words: its unknown-option message ends in an unbalanced quote
 * (`as in '-- "--bogus"`), printed as it is it reads as a broken command line.
 */
function parseArgsMessage(error: NodeJS.ErrnoException): string {
  const option = /^Unknown option '([^']*)'/.exec(error.message)?.[1];
  if (error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option !== undefined)
    return `unknown option ${option} (a value that starts with "-" goes after --, as in: -- ${option})`;
  return error.message;
}

async function main(argv: string[]): Promise<number> {
  const first = argv[0];
  const named = first !== undefined && !first.startsWith('-') ? first : undefined;
  if (named !== undefined && !(named in COMMANDS)) {
    throw new UsageError(undefined, `Unknown command "${named}"`);
  }
  const name = named ?? 'serve';
  const command = COMMANDS[name] as Command;
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({
      args: named === undefined ? argv : argv.slice(1),
      options: {
        ...Object.fromEntries(Object.entries(command.options).map(([k, o]) => [k, { type: o.type }])),
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (error) {
    throw new UsageError(name, parseArgsMessage(error as NodeJS.ErrnoException));
  }
  const flags = parsed.values as Flags;
  if (flags.help) {
    process.stdout.write(`${named === undefined ? mainHelp() : commandHelp(command)}\n`);
    return 0;
  }
  if (flags.version) {
    process.stdout.write(`${loadConfig().version}\n`);
    return 0;
  }
  const options: ConfigOptions = {
    ...(flags.tools !== undefined ? { tools: flags.tools } : {}),
    ...(flags['no-bundled'] ? { includeBundled: false } : {}),
    ...(flags['no-user'] ? { includeUser: false } : {}),
    ...(flags['no-project'] ? { includeProject: false } : {}),
  };
  return command.run(parsed.positionals, options, flags);
}

/** Runs the command line (entry.ts calls it once this module is loaded). */
export function run(argv: string[], started?: StdioPrelude): void {
  prelude = started;
  // A reader that goes away (`workflowlookup --help | head`) is not an error.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(0);
  });

  main(argv).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      // Nobody will serve what the prelude would hand over: stop reading, so that the process ends.
      prelude?.close();
      if (error instanceof UsageError) {
        const help = error.command ? commandHelp(COMMANDS[error.command] as Command) : mainHelp();
        process.stderr.write(`workflowlookup: ${error.message}\n\n${help}\n`);
        process.exitCode = 2;
        return;
      }
      process.stderr.write(`workflowlookup: ${(error as Error)?.message ?? String(error)}\n`);
      // Settings that cannot work (bad configuration, a damaged store file) are usage errors.
      process.exitCode = error instanceof ConfigError || error instanceof StoreFileError ? 2 : 1;
    },
  );
}
