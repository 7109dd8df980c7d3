import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { createServer as createTcpServer, type Socket } from 'node:net';
import { dirname, join } from 'node:path';

/**
 * Real git, offline: a bare repository on disk (the remote) and a working clone that commits and
 * pushes to it; a smart-HTTP server (`git http-backend` as CGI behind node:http) that wants a token;
 * and a TCP server that accepts and never answers.
 */

const GIT_ENV = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.com',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.com',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
};

export function git(cwd: string, ...args: string[]): string {
  return execFileSync('git', args, {
    cwd,
    env: GIT_ENV,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
  }).trim();
}

export class GitRepo {
  /** The bare repository clients fetch from. */
  readonly remote: string;
  readonly work: string;

  constructor(root: string, name = 'library.git') {
    this.remote = join(root, 'remotes', name);
    this.work = join(root, `work-${name}`);
    mkdirSync(this.remote, { recursive: true });
    git(this.remote, 'init', '--quiet', '--bare', '--initial-branch=main');
    // http-backend serves only repositories that say so (or GIT_HTTP_EXPORT_ALL).
    git(this.remote, 'config', 'http.receivepack', 'false');
    mkdirSync(this.work, { recursive: true });
    git(this.work, 'init', '--quiet', '--initial-branch=main');
  }

  /** Writes (string), links (`{ link }`) or removes (null) files, commits, and returns the commit. */
  commit(files: Record<string, string | { link: string } | null>, message = 'change'): string {
    for (const [path, content] of Object.entries(files)) {
      const full = join(this.work, path);
      rmSync(full, { force: true });
      if (content === null) continue;
      mkdirSync(dirname(full), { recursive: true });
      if (typeof content === 'string') writeFileSync(full, content);
      else symlinkSync(content.link, full);
    }
    git(this.work, 'add', '-A');
    git(this.work, 'commit', '--quiet', '--allow-empty', '-m', message);
    return git(this.work, 'rev-parse', 'HEAD');
  }

  push(ref = 'main', force = false): void {
    git(this.work, 'push', '--quiet', ...(force ? ['--force'] : []), this.remote, `HEAD:refs/heads/${ref}`);
  }

  tag(name: string): void {
    git(this.work, 'tag', '-a', name, '-m', name);
    git(this.work, 'push', '--quiet', this.remote, `refs/tags/${name}`);
  }

  deleteBranch(ref: string): void {
    git(this.remote, 'update-ref', '-d', `refs/heads/${ref}`);
  }

  /** Moves the working clone back (for a force-push). */
  resetTo(commit: string): void {
    git(this.work, 'reset', '--quiet', '--hard', commit);
  }
}

export function workflowYaml(id: string, name: string, steps = ['first', 'second']): string {
  return [
    `id: ${id}`,
    `name: ${name}`,
    'description: From git',
    'version: 1.0.0',
    'steps:',
    ...steps.map((s) => `  - {id: ${s}, title: ${s}, prompt: Do ${s}.}`),
    '',
  ].join('\n');
}

/** A smart-HTTP git server on 127.0.0.1 serving `projectRoot`, answering 401 without the right token. */
export async function smartHttp(
  projectRoot: string,
  authorization: string,
): Promise<{
  url: string;
  requests: { url: string; headers: IncomingMessage['headers'] }[];
  close: () => Promise<void>;
}> {
  const requests: { url: string; headers: IncomingMessage['headers'] }[] = [];
  const server: Server = createServer((req, res) => {
    requests.push({ url: req.url ?? '', headers: req.headers });
    if (req.headers.authorization !== authorization) {
      res.writeHead(401, { 'www-authenticate': 'Basic realm="git"' });
      res.end('unauthorized\n');
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const cgi = spawn('git', ['http-backend'], {
      env: {
        ...GIT_ENV,
        GIT_PROJECT_ROOT: projectRoot,
        GIT_HTTP_EXPORT_ALL: '1',
        PATH_INFO: decodeURIComponent(url.pathname),
        QUERY_STRING: url.search.slice(1),
        REQUEST_METHOD: req.method ?? 'GET',
        CONTENT_TYPE: req.headers['content-type'] ?? '',
        REMOTE_ADDR: '127.0.0.1',
        GIT_PROTOCOL: String(req.headers['git-protocol'] ?? ''),
        HTTP_CONTENT_ENCODING: String(req.headers['content-encoding'] ?? ''),
      },
    });
    req.pipe(cgi.stdin);
    let head = Buffer.alloc(0);
    let sent = false;
    cgi.stdout.on('data', (chunk: Buffer) => {
      if (sent) {
        res.write(chunk);
        return;
      }
      head = Buffer.concat([head, chunk]);
      const end = head.indexOf('\r\n\r\n');
      if (end < 0) return;
      const lines = head.subarray(0, end).toString('utf8').split('\r\n');
      let status = 200;
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim();
        const value = line.slice(colon + 1).trim();
        if (name.toLowerCase() === 'status') status = Number.parseInt(value, 10);
        else headers[name] = value;
      }
      res.writeHead(status, headers);
      sent = true;
      res.write(head.subarray(end + 4));
    });
    cgi.on('close', () => res.end());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

/** A TCP server that accepts connections and never answers (a remote that hangs). */
export async function hangingServer(port = 0): Promise<{
  url: string;
  /** Resolves when the first connection arrives (the fetch has started and is waiting). */
  connected: Promise<void>;
  open: () => number;
  close: () => Promise<void>;
}> {
  const sockets = new Set<Socket>();
  let arrived!: () => void;
  const connected = new Promise<void>((r) => {
    arrived = r;
  });
  const server = createTcpServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => undefined);
    arrived();
  });
  await new Promise<void>((r) => server.listen(port, '127.0.0.1', r));
  const address = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}/library.git`,
    connected,
    open: () => sockets.size,
    close: () =>
      new Promise<void>((r) => {
        for (const s of sockets) s.destroy();
        server.close(() => r());
      }),
  };
}
