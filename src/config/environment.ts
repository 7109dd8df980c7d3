// A declarative table, kept apart from the code that reads the variables (src/config.ts).
import { PRIVATE_HOSTS_SETTING } from '../catalogs/host-policy.js';
import { DEFAULT_LIMITS, DEFAULT_MAX_MESSAGE_BYTES } from '../protocol/limits.js';
import {
  DEFAULT_GIT_FETCH_TIMEOUT_MS,
  DEFAULT_GIT_MAX_BYTES,
  DEFAULT_GIT_PROTOCOLS,
  DEFAULT_GIT_SYNC_SECONDS,
  KNOWN_GIT_PROTOCOLS,
} from '../workflows/git/spec.js';
import {
  DEFAULT_AUTH_FAILURE_LIMIT,
  DEFAULT_CHECK_SLOTS,
  DEFAULT_MAX_HEADER_BYTES,
  DEFAULT_SESSIONS_PER_PRINCIPAL,
} from './defaults.js';

/**
 * Every environment variable the server reads, with what it does: the source of `--help` and of the
 * Environment table of docs/environment.md (a test keeps it in step).
 */
export const ENVIRONMENT: readonly { name: string; description: string }[] = [
  { name: 'WORKFLOW_STORAGE_PATH', description: 'extra workflow directories, path-delimiter separated' },
  {
    name: 'WORKFLOWLOOKUP_WORKFLOWS_PATH',
    description: 'the runtime (highest-precedence, writable) workflow directory',
  },
  {
    name: 'WORKFLOWLOOKUP_CONFIG_PATH',
    description:
      'config file path; its directory + `/workflows` is the runtime dir when the variable above is unset',
  },
  {
    name: 'WORKFLOWLOOKUP_INCLUDE_BUNDLED',
    description: '`false` leaves out the bundled workflows (also `--no-bundled`)',
  },
  {
    name: 'WORKFLOWLOOKUP_INCLUDE_USER',
    description: '`false` leaves out `~/.workflowlookup/workflows` (also `--no-user`)',
  },
  {
    name: 'WORKFLOWLOOKUP_INCLUDE_PROJECT',
    description: '`false` leaves out `./.workflowlookup/workflows` (also `--no-project`)',
  },
  {
    name: 'WORKFLOWLOOKUP_MAX_MESSAGE_BYTES',
    description: `largest accepted JSON-RPC message, default ${DEFAULT_MAX_MESSAGE_BYTES}`,
  },
  {
    name: 'WORKFLOWLOOKUP_DATA_DIR',
    description: 'where executions are stored (SQLite file and token secret)',
  },
  {
    name: 'WORKFLOWLOOKUP_DATABASE_URL',
    description:
      '`postgres://user:password@host:port/database`: keep executions in PostgreSQL instead of SQLite (replicas share it)',
  },
  {
    name: 'WORKFLOWLOOKUP_TOKEN_SECRET',
    description:
      'HMAC secret for continuation tokens (at least 32 characters); default: generated into the data dir. Required with `WORKFLOWLOOKUP_DATABASE_URL` (the same on every replica)',
  },
  { name: 'WORKFLOWLOOKUP_TOKEN_TTL_SECONDS', description: 'continuation token lifetime, default 86400' },
  {
    name: 'WORKFLOWLOOKUP_TOOLS',
    description:
      'tool groups tools/list shows besides `core` (always listed): guidance, executions, authoring, automation, tasks, comma-separated, or `all`; also `--tools`',
  },
  {
    name: 'WORKFLOWLOOKUP_ALLOWED_ENV',
    description:
      'comma-separated environment variables that `${{ env.X }}` templates and input defaults may read',
  },
  {
    name: 'WORKFLOWLOOKUP_ALLOW_URL_SOURCES',
    description: '`true` lets catalog tools read OpenAPI documents from http(s) URLs',
  },
  {
    name: 'WORKFLOWLOOKUP_CATALOG_<ID>_TOKEN',
    description: 'credential of catalog `<id>` (also `_USERNAME`, `_PASSWORD`, `_API_KEY`)',
  },
  {
    name: 'WORKFLOWLOOKUP_CATALOG_<ID>_ORIGIN',
    description:
      'the only origin (`https://host:port`) the credential of catalog `<id>` is sent to; overrides the binding recorded at import',
  },
  {
    name: PRIVATE_HOSTS_SETTING,
    description:
      'comma-separated hosts (`host`, `host:port`, `[::1]:8080`) or subnets (`10.0.0.0/8`) on loopback, private or link-local addresses that catalog commands and URL sources may reach (`*`: any); default none',
  },
  {
    name: 'WORKFLOWLOOKUP_GIT_SOURCES',
    description:
      'git repositories to serve workflows from (docs/git-sources.md): a JSON array of `{"url", "ref", "path"}` or a comma-separated list of `url#ref:path`; later ones override earlier ones, all above `WORKFLOW_STORAGE_PATH` and below the runtime dir',
  },
  {
    name: 'WORKFLOWLOOKUP_GIT_SYNC_INTERVAL',
    description: `seconds between two fetches of each git source, default ${DEFAULT_GIT_SYNC_SECONDS} (0: at start and on \`workflowlookup sources sync\` only)`,
  },
  {
    name: 'WORKFLOWLOOKUP_GIT_MAX_BYTES',
    description: `largest repository a git source may fetch (and largest set of workflow files), default ${DEFAULT_GIT_MAX_BYTES}`,
  },
  {
    name: 'WORKFLOWLOOKUP_GIT_TIMEOUT',
    description: `seconds one fetch may take before it is abandoned (the last good set stays), default ${DEFAULT_GIT_FETCH_TIMEOUT_MS / 1000}`,
  },
  {
    name: 'WORKFLOWLOOKUP_GIT_TOKEN',
    description:
      'token sent (HTTP Basic, user `x-access-token` unless given as `user:token`) to https git sources, through the environment of git, never its arguments',
  },
  {
    name: 'WORKFLOWLOOKUP_GIT_TOKEN_<HOST>',
    description:
      'token for the git sources on one host (`WORKFLOWLOOKUP_GIT_TOKEN_GITHUB_COM`: the host name upper-cased, other characters `_`); before `WORKFLOWLOOKUP_GIT_TOKEN`',
  },
  {
    name: 'WORKFLOWLOOKUP_GIT_ALLOW_PROTOCOLS',
    description: `protocols git sources may use, comma-separated, from ${KNOWN_GIT_PROTOCOLS.join(', ')}; default ${DEFAULT_GIT_PROTOCOLS.join(',')}`,
  },
  {
    name: 'WORKFLOW_GIT_REPOS',
    description:
      "WorkRail's git repositories (a JSON array of `{repositoryUrl, branch}` or comma-separated URLs), served from their `workflows` folder before `WORKFLOWLOOKUP_GIT_SOURCES` (docs/workrail-compatibility.md)",
  },
  {
    name: 'WORKFLOW_GIT_REPO_URL',
    description:
      "WorkRail's single git repository (its `workflows` folder), on branch `WORKFLOW_GIT_REPO_BRANCH` (default main)",
  },
  { name: 'WORKFLOW_GIT_REPO_BRANCH', description: 'the branch of `WORKFLOW_GIT_REPO_URL`, default main' },
  {
    name: 'WORKFLOW_GIT_SYNC_INTERVAL',
    description: "WorkRail's sync interval in minutes; used when `WORKFLOWLOOKUP_GIT_SYNC_INTERVAL` is unset",
  },
  {
    name: 'WORKFLOWLOOKUP_HTTP_HOST',
    description: '`serve --http` address, default 127.0.0.1 (also `--host`)',
  },
  { name: 'WORKFLOWLOOKUP_HTTP_PORT', description: '`serve --http` port, default 3927 (also `--port`)' },
  { name: 'WORKFLOWLOOKUP_HTTP_PATH', description: 'MCP endpoint path, default `/mcp` (also `--path`)' },
  {
    name: 'WORKFLOWLOOKUP_PUBLIC_URL',
    description: 'the endpoint as clients reach it (behind a reverse proxy); names the protected resource',
  },
  {
    name: 'WORKFLOWLOOKUP_ALLOWED_HOSTS',
    description: 'Host header names accepted (comma-separated); default the loopback names and the bind host',
  },
  {
    name: 'WORKFLOWLOOKUP_ALLOWED_ORIGINS',
    description: 'Origin hosts accepted from browsers (comma-separated); default the allowed hosts',
  },
  {
    name: 'WORKFLOWLOOKUP_AUTH',
    description: '`jwt` or `tokens`: how HTTP callers authenticate (default: none, loopback only)',
  },
  { name: 'WORKFLOWLOOKUP_JWT_ISSUER', description: 'with `jwt`: the issuer (`iss`) tokens must carry' },
  { name: 'WORKFLOWLOOKUP_JWT_AUDIENCE', description: 'with `jwt`: the audience (`aud`) tokens must carry' },
  { name: 'WORKFLOWLOOKUP_JWKS_URL', description: 'with `jwt`: where the signing keys are published' },
  { name: 'WORKFLOWLOOKUP_JWKS_FILE', description: 'with `jwt`: a local JWKS file instead of a URL' },
  {
    name: 'WORKFLOWLOOKUP_JWT_PRINCIPAL_CLAIM',
    description: 'with `jwt`: the claim naming the principal, default `sub`',
  },
  {
    name: 'WORKFLOWLOOKUP_TOKENS_FILE',
    description:
      'with `tokens`: the hashed static tokens (`workflowlookup token add`), default `<data dir>/tokens.json`',
  },
  {
    name: 'WORKFLOWLOOKUP_RATE_LIMIT',
    description: 'HTTP requests per minute per principal, default 600 (`0` turns the limit off)',
  },
  { name: 'WORKFLOWLOOKUP_HTTP_MAX_SESSIONS', description: 'open 2025-11-25 sessions at most, default 256' },
  {
    name: 'WORKFLOWLOOKUP_HTTP_MAX_SESSIONS_PER_PRINCIPAL',
    description: `open 2025-11-25 sessions of one principal at most, default ${DEFAULT_SESSIONS_PER_PRINCIPAL} (with authentication)`,
  },
  {
    name: 'WORKFLOWLOOKUP_HTTP_MAX_HEADER_BYTES',
    description: `largest accepted HTTP request head (431 beyond), default ${DEFAULT_MAX_HEADER_BYTES}`,
  },
  {
    name: 'WORKFLOWLOOKUP_AUTH_FAILURE_LIMIT',
    description: `failed bearer tokens per minute per client address before 429, default ${DEFAULT_AUTH_FAILURE_LIMIT} (\`0\`: no limit)`,
  },
  {
    name: 'WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS',
    description: `\`resources/subscribe\`: resources one session may be subscribed to, default ${DEFAULT_LIMITS.subscriptionsPerSession}`,
  },
  {
    name: 'WORKFLOWLOOKUP_MAX_SUBSCRIPTIONS_PER_PRINCIPAL',
    description: `the same over all sessions of one principal, default ${DEFAULT_LIMITS.subscriptionsPerPrincipal}`,
  },
  {
    name: 'WORKFLOWLOOKUP_MAX_TASKS',
    description: `MCP tasks one server works on at once, default ${DEFAULT_LIMITS.tasks}`,
  },
  {
    name: 'WORKFLOWLOOKUP_MAX_TASKS_PER_PRINCIPAL',
    description: `the same for one principal, default ${DEFAULT_LIMITS.tasksPerPrincipal}`,
  },
  {
    name: 'WORKFLOWLOOKUP_DASHBOARD_MAX_STREAMS',
    description: `live dashboard pages open at once, default ${DEFAULT_LIMITS.streams}`,
  },
  {
    name: 'WORKFLOWLOOKUP_DASHBOARD_MAX_STREAMS_PER_PRINCIPAL',
    description: `the same for one principal, default ${DEFAULT_LIMITS.streamsPerPrincipal}`,
  },
  {
    name: 'WORKFLOWLOOKUP_HTTP_DASHBOARD',
    description:
      '`false` turns off the dashboard `serve --http` serves at `/dashboard` (on by default, behind the same authentication)',
  },
  {
    name: 'WORKFLOWLOOKUP_DASHBOARD_PORT',
    description:
      'port of `workflowlookup dashboard` on 127.0.0.1, default 3928 (0: any free port); also `--port`',
  },
  {
    name: 'WORKFLOWLOOKUP_LOG_LEVEL',
    description:
      'log level: fatal, error, warn, info (default), debug, trace or silent; JSON lines on stderr, human lines when stderr is a terminal',
  },
  {
    name: 'WORKFLOWLOOKUP_METRICS_PORT',
    description:
      '`serve --http`: also serve `/metrics`, `/healthz` and `/readyz` without authentication on this port (for a Prometheus scraper); unset: none. `/metrics` on the MCP port needs the `admin` scope',
  },
  {
    name: 'WORKFLOWLOOKUP_METRICS_HOST',
    description: 'address of that metrics listener, default 127.0.0.1',
  },
  {
    name: 'WORKFLOWLOOKUP_DRAIN_SECONDS',
    description:
      '`serve --http`: after SIGTERM, keep serving this long with `/readyz` answering 503 (so a load balancer stops sending work) before closing, default 0; a second signal closes at once',
  },
  {
    name: 'OTEL_EXPORTER_OTLP_ENDPOINT',
    description:
      'OpenTelemetry traces and metrics over OTLP/HTTP (JSON) to this collector (also `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_TRACES_EXPORTER=otlp`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_HEADERS`); unset: traces and OTLP metrics off and the SDK not loaded',
  },
  {
    name: 'OTEL_METRICS_EXPORTER',
    description:
      '`otlp`: the `/metrics` instruments also pushed over OTLP/HTTP (JSON), every `OTEL_METRIC_EXPORT_INTERVAL` ms (default 60000), to `OTEL_EXPORTER_OTLP_METRICS_ENDPOINT` or the shared endpoint (which alone turns them on too); `none`: not pushed (Prometheus scrapes `/metrics`)',
  },
  {
    name: 'WORKFLOWLOOKUP_APPROVAL_ELICITATION',
    description:
      "ask the client's user to approve step outputs through MCP elicitation (form mode): default on over stdio, off over HTTP (see docs/approvals-and-checks.md); `true` or `false` for both",
  },
  {
    name: 'WORKFLOWLOOKUP_MAX_DELEGATION_DEPTH',
    description:
      'how deep child executions may nest (a delegating step in a child workflow counts): default 3; deeper is DELEGATION_REFUSED',
  },
  {
    name: 'WORKFLOWLOOKUP_MAX_OPEN_CHILDREN',
    description:
      'child executions one principal may have open (idle, running or paused) at once: default 200; more is DELEGATION_REFUSED',
  },
  {
    name: 'WORKFLOWLOOKUP_APPROVERS',
    description:
      "principals (comma-separated) who may decide approvals of other principals' steps that name them in `approvers`; a workflow's `approvers` alone grants nothing (default none: each execution's owner decides)",
  },
  {
    name: 'WORKFLOWLOOKUP_RECORD_KEY',
    description:
      'Ed25519 private key (PEM, or the path of a PEM file) execution records are signed with; default: generated into the data dir (`record-keys.json`). Give every replica the same one',
  },
  {
    name: 'WORKFLOWLOOKUP_RECORD_PUBLIC_KEYS',
    description:
      'file of older public keys (JWKS or PEM) the server still publishes beside its own, so records they signed still verify after the configured key changed',
  },
  {
    name: 'WORKFLOWLOOKUP_CHECKS_FILE',
    description:
      'JSON or YAML file of the checks steps may name (`verify: {check}`) and the server runs; unset: no checks',
  },
  {
    name: 'WORKFLOWLOOKUP_HTTP_CHECKS',
    description: '`1`/`true` lets `serve --http` run the configured checks (off by default)',
  },
  {
    name: 'WORKFLOWLOOKUP_CHECKS_MAX_CONCURRENT',
    description: `server-run checks (command and HTTP) running at once, default ${DEFAULT_CHECK_SLOTS.maxConcurrent}; more wait in line`,
  },
  {
    name: 'WORKFLOWLOOKUP_CHECKS_MAX_PER_PRINCIPAL',
    description: `server-run checks of one principal running at once, default ${DEFAULT_CHECK_SLOTS.maxPerPrincipal}`,
  },
  {
    name: 'WORKFLOWLOOKUP_CHECKS_MAX_QUEUED',
    description: `server-run checks waiting for a slot, default ${DEFAULT_CHECK_SLOTS.maxQueued}; one more is refused with \`CHECK_BUSY\` (retryable; \`0\`: never wait)`,
  },
  { name: 'XDG_CONFIG_HOME', description: 'base of the default runtime dir on Linux' },
  { name: 'XDG_DATA_HOME', description: 'base of the default data dir on Linux' },
];
