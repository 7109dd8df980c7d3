import { createHash } from 'node:crypto';
import type {
  DocumentKind,
  DocumentListener,
  DocumentWriter,
  NewDocument,
  RuntimeDocument,
  RuntimeDocumentStore,
} from '../runtime-documents.js';
import { DOCUMENT_KINDS } from '../runtime-documents.js';
import type { NotificationListener } from './listener.js';

type Row = Record<string, unknown>;
/** One named (prepared) statement, as the store runs it. */
type Run = (name: string, text: string, values: unknown[]) => Promise<Row[]>;

/** The channel migration 5's trigger notifies, with the kind of the changed document as payload. */
export const RUNTIME_CHANNEL = 'workflowlookup_runtime';

const SQL = {
  list: 'SELECT * FROM runtime_documents WHERE kind = $1 ORDER BY name',
  get: 'SELECT * FROM runtime_documents WHERE kind = $1 AND name = $2',
  // Both unique indexes answer this, so a serializable transaction locks only what it read.
  find: `SELECT * FROM runtime_documents WHERE kind = $1 AND lower(name) = lower($2)
    UNION SELECT * FROM runtime_documents WHERE kind = $1 AND key = $3`,
  put: `INSERT INTO runtime_documents (kind, name, key, content, version, updated_at, updated_by)
    VALUES ($1, $2, $3, $4, $5, $6, $7)
    ON CONFLICT (kind, name) DO UPDATE SET key = EXCLUDED.key, content = EXCLUDED.content,
      version = EXCLUDED.version, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by
    RETURNING *`,
  remove: 'DELETE FROM runtime_documents WHERE kind = $1 AND name = $2 RETURNING name',
} as const;

function toDocument(row: Row): RuntimeDocument {
  return {
    kind: row.kind as DocumentKind,
    name: row.name as string,
    key: row.key as string,
    content: row.content as string,
    version: row.version as string,
    updated_at: row.updated_at as string,
    updated_by: row.updated_by as string,
  };
}

function operations(run: Run): DocumentWriter {
  const q = (name: keyof typeof SQL, values: unknown[]) => run(`documents_${name}`, SQL[name], values);
  return {
    list: async (kind) => (await q('list', [kind])).map(toDocument),
    get: async (kind, name) => {
      const row = (await q('get', [kind, name]))[0];
      return row === undefined ? undefined : toDocument(row);
    },
    find: async (kind, match) =>
      (await q('find', [kind, match.name ?? null, match.key ?? null]))
        .map(toDocument)
        .sort((a, b) => (a.name < b.name ? -1 : 1)),
    put: async (d: NewDocument) => {
      const version = createHash('sha256').update(d.content, 'utf8').digest('hex');
      const rows = await q('put', [
        d.kind,
        d.name,
        d.key,
        d.content,
        version,
        new Date().toISOString(),
        d.updated_by,
      ]);
      return toDocument(rows[0] as Row);
    },
    remove: async (kind, name) => (await q('remove', [kind, name])).length > 0,
  };
}

/**
 * The PostgreSQL side of the runtime document port: reads through the store's pool, changes in the
 * store's serializable transactions (retried on a conflict or a duplicate key, so the second of two
 * concurrent saves runs again and sees the first), and changes announced by the store's listener.
 */
export class PostgresDocuments implements RuntimeDocumentStore {
  readonly location: string;
  private readonly reads: DocumentWriter;

  constructor(
    private readonly deps: {
      location: string;
      read: Run;
      transaction: <T>(body: (run: Run) => Promise<T>) => Promise<T>;
      listener: NotificationListener;
    },
  ) {
    this.location = deps.location;
    this.reads = operations(deps.read);
  }

  get listening(): boolean {
    return this.deps.listener.connected;
  }

  list(kind: DocumentKind): Promise<RuntimeDocument[]> {
    return this.reads.list(kind);
  }

  get(kind: DocumentKind, name: string): Promise<RuntimeDocument | undefined> {
    return this.reads.get(kind, name);
  }

  transaction<T>(fn: (tx: DocumentWriter) => Promise<T>): Promise<T> {
    return this.deps.transaction((run) => fn(operations(run)));
  }

  watch(listener: DocumentListener): () => void {
    return this.deps.listener.subscribe({
      channel: RUNTIME_CHANNEL,
      notify: (payload) =>
        listener(
          (DOCUMENT_KINDS as readonly string[]).includes(payload) ? (payload as DocumentKind) : undefined,
        ),
      resync: () => listener(undefined),
    });
  }
}
