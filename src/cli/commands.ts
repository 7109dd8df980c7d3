// The command line's commands and options: one table, from which parsing (src/cli/main.ts), every
// --help text and the "Command line" block of docs/cli.md are made (test/docs.test.ts keeps it in step).
import { PROFILES } from '../config.js';
import { SCOPES } from '../protocol/scopes.js';

export interface OptionSpec {
  type: 'boolean' | 'string';
  value?: string;
  help: string;
}

const SOURCE_OPTIONS: Record<string, OptionSpec> = {
  'no-bundled': {
    type: 'boolean',
    help: 'leave out the bundled workflows (env WORKFLOWLOOKUP_INCLUDE_BUNDLED=false)',
  },
  'no-user': {
    type: 'boolean',
    help: 'leave out ~/.workflowlookup/workflows (env WORKFLOWLOOKUP_INCLUDE_USER=false)',
  },
  'no-project': {
    type: 'boolean',
    help: 'leave out ./.workflowlookup/workflows (env WORKFLOWLOOKUP_INCLUDE_PROJECT=false)',
  },
};

const STORE_OPTION: OptionSpec = {
  type: 'string',
  value: 'DIR|URL',
  help: 'a SQLite data dir or a postgres:// URL (default WORKFLOWLOOKUP_DATABASE_URL, else the data dir)',
};

export interface CommandSpec {
  usage: string;
  summary: string;
  options: Record<string, OptionSpec>;
}

export const COMMAND_SPECS = {
  serve: {
    usage:
      'serve [--http [--host H] [--port P] [--path /mcp] [--conformance-fixtures]] [--stdio] [--tools LIST]',
    summary: 'run the MCP server: on stdio (the default), over Streamable HTTP, or both',
    options: {
      http: {
        type: 'boolean',
        help: 'serve Streamable HTTP (both protocol eras), and the dashboard at /dashboard',
      },
      stdio: { type: 'boolean', help: 'with --http: serve stdio as well' },
      host: {
        type: 'string',
        value: 'H',
        help: 'HTTP address, default 127.0.0.1 (env WORKFLOWLOOKUP_HTTP_HOST)',
      },
      port: { type: 'string', value: 'P', help: 'HTTP port, default 3927 (env WORKFLOWLOOKUP_HTTP_PORT)' },
      path: {
        type: 'string',
        value: 'PATH',
        help: 'MCP endpoint path, default /mcp (env WORKFLOWLOOKUP_HTTP_PATH)',
      },
      tools: {
        type: 'string',
        value: 'LIST',
        help: `tool groups to list besides core (always listed): ${PROFILES.filter((p) => p !== 'core').join(', ')} or all, comma-separated (env WORKFLOWLOOKUP_TOOLS)`,
      },
      'conformance-fixtures': {
        type: 'boolean',
        help: "with --http: also serve the MCP conformance suite's reference tools, prompts and resources (for `npm run conformance` only)",
      },
      ...SOURCE_OPTIONS,
    },
  },
  dashboard: {
    usage: 'dashboard [--port P]',
    summary: 'web dashboard of executions and workflows on 127.0.0.1 (read-only pages, confirmed actions)',
    options: {
      port: {
        type: 'string',
        value: 'P',
        help: 'port, default 3928 (env WORKFLOWLOOKUP_DASHBOARD_PORT; 0 picks a free one)',
      },
      ...SOURCE_OPTIONS,
    },
  },
  list: {
    usage: 'list [--json]',
    summary: 'list the workflows every source provides (and broken files)',
    options: { json: { type: 'boolean', help: 'print the workflow_list answer as JSON' }, ...SOURCE_OPTIONS },
  },
  validate: {
    usage: 'validate [--json] <files...>',
    summary: 'check workflow files the way the server does, warnings included (exit 1 on any error)',
    options: { json: { type: 'boolean', help: 'print one report per file as JSON' } },
  },
  test: {
    usage: 'test [--json] [paths...]',
    summary:
      "run the tests beside workflows (<id>.test.yaml) through the server's engine, with coverage (exit 1 on a failure, 2 on a malformed file)",
    options: {
      json: { type: 'boolean', help: 'print every scenario, its result and the coverage as JSON' },
      // paths: test files, workflow files (their tests beside them) or directories; none: every source.
      ...SOURCE_OPTIONS,
    },
  },
  init: {
    usage: 'init',
    summary: 'create ./.workflowlookup/workflows with a sample workflow',
    options: {},
  },
  sources: {
    usage: 'sources [sync] [--json]',
    summary:
      'show the sources in precedence order and where each workflow comes from (git sources: ref, commit, last sync, errors, refused commits); `sources sync` fetches the git sources now',
    options: { ...SOURCE_OPTIONS, json: { type: 'boolean', help: 'print as JSON' } },
  },
  schema: {
    usage: 'schema',
    summary: 'print the workflow JSON Schema',
    options: {},
  },
  migrate: {
    usage: 'migrate [--store DIR|URL]',
    summary: 'bring the execution store (SQLite data dir or PostgreSQL) up to date; print its schema version',
    options: { store: STORE_OPTION },
  },
  export: {
    usage: 'export [--store DIR|URL] [--out FILE]',
    summary:
      'write every execution as JSON lines (a backup, or to move between SQLite and PostgreSQL), after a header naming the token secret (a fingerprint, never the secret)',
    options: {
      store: STORE_OPTION,
      out: { type: 'string', value: 'FILE', help: 'write here (default stdout)' },
    },
  },
  import: {
    usage: 'import FILE|- [--store DIR|URL] [--new-tokens]',
    summary:
      'read executions that export wrote; those already present are kept as they are. Refused (exit 2, nothing written) when the target signs tokens with another secret than the source did',
    options: {
      store: STORE_OPTION,
      'new-tokens': {
        type: 'boolean',
        help: 'import even so: live tokens become invalid and agents get fresh ones from workflow_resume',
      },
    },
  },
  approvals: {
    usage: 'approvals [--json]',
    summary: "list the step outputs waiting for a person's approval, oldest first (on the server host)",
    options: { json: { type: 'boolean', help: 'print them as JSON' } },
  },
  approve: {
    usage: 'approve <approval> [--reason TEXT]',
    summary:
      'approve a step output, named by the approval id `approvals` lists (appr_…); the agent moves on at its next poll',
    options: { reason: { type: 'string', value: 'TEXT', help: 'why (kept in the execution history)' } },
  },
  reject: {
    usage: 'reject <approval> [--reason TEXT]',
    summary: 'reject it: the step goes back to the agent with the reason and a fresh token',
    options: { reason: { type: 'string', value: 'TEXT', help: 'why (the agent is shown it)' } },
  },
  record: {
    usage: 'record <execution> [--out FILE]',
    summary:
      "write an execution's signed record: a Sigstore bundle holding an in-toto statement of every event, chained and signed with the server's key (docs/records.md)",
    options: { out: { type: 'string', value: 'FILE', help: 'write here (default stdout)' } },
  },
  verify: {
    usage:
      'verify <record>|- [--key FILE | --keys URL|FILE] [--workflow FILE] [--require completed,approved,checked] [--execution ID] [--head HASH] [--json]',
    summary:
      'check a record offline: signature, chain, definition and policy. Exit 0 when it holds, 1 naming the first failure, 2 when it is not a record or the options are wrong',
    options: {
      key: { type: 'string', value: 'FILE', help: 'trust this public key (PEM or JWK/JWKS file)' },
      keys: {
        type: 'string',
        value: 'URL|FILE',
        help: "trust these keys: a JWKS file, or a server's /.well-known/workflowlookup-record-keys.json (default: this host's keys)",
      },
      workflow: { type: 'string', value: 'FILE', help: 'the workflow file the execution must have run' },
      require: {
        type: 'string',
        value: 'LIST',
        help: 'completed (finished completed), approved (every approval decided by a person), checked (every step completed on a passing check)',
      },
      execution: { type: 'string', value: 'ID', help: 'the execution the record must be of' },
      head: { type: 'string', value: 'HASH', help: "the last event's hash the record must end at" },
      json: { type: 'boolean', help: 'print the result as JSON' },
    },
  },
  keys: {
    usage: 'keys [rotate | revoke KEYID]',
    summary:
      'print the public keys records are signed with (a JWKS, as /.well-known/workflowlookup-record-keys.json serves it); rotate: a new key signs, the old one stays published; revoke: stop publishing a retired key',
    options: {},
  },
  token: {
    usage: 'token add NAME [--scopes read,run] [--principal P] | token list | token remove NAME',
    summary: 'manage the static tokens of WORKFLOWLOOKUP_AUTH=tokens (a new token is printed once)',
    options: {
      scopes: {
        type: 'string',
        value: 'LIST',
        help: `scopes to grant: ${SCOPES.join(', ')} (default read,run)`,
      },
      principal: { type: 'string', value: 'P', help: 'the principal the token acts as (default NAME)' },
    },
  },
} satisfies Record<string, CommandSpec>;

export const TITLE =
  'workflowlookup - MCP server that keeps coding agents on the rails of multi-step workflows';

export function optionLines(options: Record<string, OptionSpec>): string[] {
  return Object.entries(options).map(([name, o]) => {
    const flag = `--${name}${o.value ? ` ${o.value}` : ''}`;
    return `  ${flag.padEnd(22)} ${o.help}`;
  });
}

/** The command reference of docs/cli.md: each command, what it does and its options. */
export function commandReference(): string {
  return Object.values(COMMAND_SPECS as Record<string, CommandSpec>)
    .flatMap((c) => [
      `workflowlookup ${c.usage}`,
      `    ${c.summary}`,
      ...optionLines(c.options).map((line) => `  ${line}`),
      '',
    ])
    .join('\n')
    .trimEnd();
}
