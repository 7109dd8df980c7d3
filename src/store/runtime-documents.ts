/**
 * The storage port for what agents save at runtime — workflow definitions, imported OpenAPI catalogs
 * and the origins catalog credentials are bound to — when it lives in the database instead of files,
 * so that every replica sharing the database serves the same at once. The PostgreSQL adapter
 * implements it (migration 5); a SQLite server is one machine and keeps these files in its runtime
 * dir. Definitions and catalogs are checked and interpreted above this port (src/workflows,
 * src/catalogs): here they are named texts with a version.
 */
import type { Logger } from '../telemetry/log.js';
export const DOCUMENT_KINDS = ['workflow', 'catalog', 'catalog_manifest', 'credential_binding'] as const;
export type DocumentKind = (typeof DOCUMENT_KINDS)[number];

export interface RuntimeDocument {
  kind: DocumentKind;
  /** Its name within its kind (a workflow's file name, `<catalog>.json`); unique ignoring case. */
  name: string;
  /** What it holds (the workflow id, the catalog id, the credential variable); unique within its kind. */
  key: string;
  content: string;
  /** sha256 of the content's UTF-8 bytes (hex), the same as a file's version. */
  version: string;
  updated_at: string;
  /** The principal whose call wrote it. */
  updated_by: string;
}

export type NewDocument = Pick<RuntimeDocument, 'kind' | 'name' | 'key' | 'content' | 'updated_by'>;

export interface DocumentWriter {
  list(kind: DocumentKind): Promise<RuntimeDocument[]>;
  get(kind: DocumentKind, name: string): Promise<RuntimeDocument | undefined>;
  /** The documents of a kind whose name equals `name` ignoring case, or whose key is `key`. */
  find(kind: DocumentKind, match: { name?: string; key?: string }): Promise<RuntimeDocument[]>;
  /**
   * Writes the document with this exact name (replacing it). The database refuses a second document
   * with the same key or the same name in another case: remove the old one first.
   */
  put(document: NewDocument): Promise<RuntimeDocument>;
  /** Removes the document with this exact name; false when there was none. */
  remove(kind: DocumentKind, name: string): Promise<boolean>;
}

/**
 * Called after a commit changed documents of `kind` (in this process or any other sharing the
 * database), or with `undefined` when changes may have been missed (the listening connection was
 * (re)established): read everything again.
 */
export type DocumentListener = (kind: DocumentKind | undefined) => void;

export interface RuntimeDocumentStore {
  list(kind: DocumentKind): Promise<RuntimeDocument[]>;
  get(kind: DocumentKind, name: string): Promise<RuntimeDocument | undefined>;
  /**
   * Runs `fn` atomically and as if alone (serializable), so a check-then-write (a save that must not
   * replace another workflow, an optimistic version) holds across replicas. Like the execution store,
   * the adapter may run `fn` again after a conflict with a concurrent transaction: `fn` acts on the
   * store only through `tx` and keeps no effect of a previous run.
   */
  transaction<T>(fn: (tx: DocumentWriter) => Promise<T>): Promise<T>;
  /** Subscribes to changes; returns the unsubscribe. */
  watch(listener: DocumentListener): () => void;
  /**
   * Whether change notifications are flowing now. While they are not, a cached view may be stale
   * without being told: read again before trusting it.
   */
  readonly listening: boolean;
  /** Where the documents live, for paths and messages (never with a password). */
  readonly location: string;
}

/**
 * A document store opened on first use (a server does not connect to its database at start-up). A
 * watcher subscribed before the store could be opened is attached as soon as an open succeeds: the
 * opener is tried again with a growing pause (up to 5 s), and attached watchers hear `undefined`
 * (read everything) once it is.
 */
export function lazyDocumentStore(
  open: () => Promise<RuntimeDocumentStore>,
  location: string,
  log?: Logger,
): RuntimeDocumentStore {
  let store: RuntimeDocumentStore | undefined;
  let opening: Promise<RuntimeDocumentStore> | undefined;
  const pending = new Map<DocumentListener, () => void>();
  let retry: NodeJS.Timeout | undefined;
  let pauseMs = 250;
  let reported = false;

  const opened = (): Promise<RuntimeDocumentStore> => {
    if (store !== undefined) return Promise.resolve(store);
    opening ??= open().then(
      (s) => {
        store = s;
        for (const [listener] of pending) pending.set(listener, s.watch(listener));
        return s;
      },
      (error: unknown) => {
        opening = undefined;
        throw error;
      },
    );
    return opening;
  };

  // Said once, on the first failure: a short-lived process (`workflowlookup list`) may end before a retry.
  const unavailable = (error: unknown) => {
    if (!reported) log?.error(`shared workflows and catalogs are unavailable: ${(error as Error).message}`);
    reported = true;
  };

  const attachLater = () => {
    if (retry !== undefined || store !== undefined || pending.size === 0) return;
    retry = setTimeout(() => {
      retry = undefined;
      opened().then(
        () => {
          pauseMs = 250;
        },
        (error: unknown) => {
          unavailable(error);
          pauseMs = Math.min(pauseMs * 2, 5000);
          attachLater();
        },
      );
    }, pauseMs);
    retry.unref();
  };

  return {
    // Fixed at creation: definitions' paths are made from it before the store is open.
    location,
    get listening() {
      return store?.listening ?? false;
    },
    list: async (kind) => (await opened()).list(kind),
    get: async (kind, name) => (await opened()).get(kind, name),
    transaction: async (fn) => (await opened()).transaction(fn),
    watch(listener) {
      if (store !== undefined) return store.watch(listener);
      pending.set(listener, () => undefined);
      opened().catch((error: unknown) => {
        unavailable(error);
        attachLater();
      });
      return () => {
        const stop = pending.get(listener);
        pending.delete(listener);
        stop?.();
        if (pending.size === 0 && retry !== undefined) {
          clearTimeout(retry);
          retry = undefined;
        }
      };
    },
  };
}

/**
 * `postgres://user@host:port/database` for a connection string, without the password or parameters:
 * how paths and messages name the database before (and without) loading its driver.
 */
export function describeDatabaseUrl(url: string): string {
  try {
    const u = new URL(url);
    const user = u.username ? `${decodeURIComponent(u.username)}@` : '';
    return `${u.protocol}//${user}${u.host}${u.pathname}`;
  } catch {
    return 'postgres://(unparsable URL)';
  }
}
