import pg from 'pg';

/** Where a connection string points, resolved as `pg` resolves it (URL, then PG* variables, then defaults). */
export interface Target {
  host: string;
  port: number;
  user: string;
  database: string;
  /** Kept only to scrub it from messages. */
  password: string | undefined;
}

export function resolveTarget(url: string): Target {
  const client = new pg.Client({ connectionString: url });
  const password =
    typeof client.password === 'string' && client.password !== '' ? client.password : undefined;
  return {
    host: client.host,
    port: client.port,
    user: client.user ?? '',
    database: client.database ?? '',
    password,
  };
}

/** `postgres://user@host:port/database`: the target for messages and logs, never with the password. */
export function describeTarget(target: Target): string {
  const host = target.host.startsWith('/') ? `[${target.host}]` : target.host;
  return `postgres://${target.user ? `${target.user}@` : ''}${host}:${target.port}/${target.database}`;
}

/** Removes the password (as written, and URL-encoded) from a message that may quote it. */
export function scrub(message: string, target: Target | undefined): string {
  const secret = target?.password;
  if (!secret) return message;
  let out = message;
  for (const form of new Set([secret, encodeURIComponent(secret)])) out = out.split(form).join('***');
  return out;
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'ENOENT', // a Unix socket path that does not exist
]);

/**
 * What went wrong talking to the server, in words that name the host, the user or the database
 * (never the password), or undefined when the error is not about the connection.
 */
export function describeConnectionError(error: unknown, target: Target): string | undefined {
  const e = error as { code?: unknown; message?: unknown };
  const code = typeof e?.code === 'string' ? e.code : '';
  const raw = typeof e?.message === 'string' ? e.message : String(error);
  const at = `PostgreSQL at ${target.host}:${target.port}`;
  const user = `user "${target.user}"`;
  let text: string | undefined;
  if (code === 'ECONNREFUSED') {
    text = `cannot connect to ${at}: connection refused (is the server running and listening on that host and port?)`;
  } else if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    text = `cannot connect to PostgreSQL: host "${target.host}" not found`;
  } else if (code === 'ENOENT') {
    text = `cannot connect to ${at}: no server socket there`;
  } else if (code === 'ETIMEDOUT' || code === 'EHOSTUNREACH' || code === 'ENETUNREACH') {
    text = `cannot connect to ${at}: the host cannot be reached (${code})`;
  } else if (/timeout/i.test(raw) && /connect/i.test(raw)) {
    text = `cannot connect to ${at}: no answer in time (is the host reachable, or are all connections busy?)`;
  } else if (code === '28P01') {
    text = `${at} refused ${user}: wrong password`;
  } else if (code.startsWith('28')) {
    text = `${at} refused ${user}: ${raw}`;
  } else if (/password must be a string|no password was provided|password authentication/i.test(raw)) {
    text = `${at} asks ${user} for a password and none was given (put it in the URL or PGPASSWORD)`;
  } else if (code === '3D000') {
    text = `database "${target.database}" does not exist on ${at} (create it, or fix the database name in the URL)`;
  } else if (code === '53300') {
    text = `${at} has no free connection slots (too many clients)`;
  } else if (code === '57P03') {
    text = `${at} is not accepting connections yet (starting up or recovering)`;
  } else if (code.startsWith('57P') || code.startsWith('08') || NETWORK_CODES.has(code)) {
    text = `lost the connection to ${at}: ${raw}`;
  } else if (/Connection terminated|connection (ended|closed)|not queryable/i.test(raw)) {
    text = `lost the connection to ${at}: ${raw}`;
  } else if (/SSL|TLS|certificate|self.signed/i.test(raw) || /CERT|SSL|TLS/.test(code)) {
    text = `TLS with ${at} failed: ${raw}`;
  }
  return text === undefined ? undefined : scrub(text, target);
}
