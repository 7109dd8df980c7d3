import { lstat, unlink } from 'node:fs/promises';
import { basename, extname } from 'node:path';
import { fail } from '../engine/errors.js';
import type { RuntimeDocumentStore } from '../store/runtime-documents.js';
import { contentVersion, type LoadedWorkflow, type RegistryEntry } from './entry.js';
import type { DefinitionFormat } from './parse.js';
import type { WorkflowRegistry } from './registry.js';
import { changeRuntimeDir, checkFileName, runtimeFile, writeAtomically } from './runtime-files.js';
import type { SourceKind } from './sources.js';

export const extensionFor = (format: DefinitionFormat) => (format === 'json' ? '.json' : '.yaml');

export interface SaveRequest {
  /** The definition's id (it passed the check). */
  id: string;
  content: string;
  format: DefinitionFormat;
  /** A plain file name (see `target`); default `<id>.json` or `<id>.yaml`. */
  fileName?: string | undefined;
  /** Replace an existing workflow with the same id. */
  overwrite?: boolean | undefined;
  /** The version the caller last read: the save fails unless the workflow is still at it. */
  expectedVersion?: string | undefined;
  /** Who saves (kept with a definition in the database). */
  principal: string;
}

export interface SaveOutcome {
  path: string;
  version: string;
  /** False when an existing workflow was replaced. */
  created: boolean;
}

export interface RenameRequest {
  entry: LoadedWorkflow;
  newId: string;
  /** The definition's text with the new id. */
  content: string;
  /** The version the text was read at: a definition changed since is not renamed. */
  readVersion: string;
  principal: string;
}

/**
 * Where the workflows agents save live, and the rules for changing them: the runtime dir (files) or,
 * with PostgreSQL, the database every replica shares. Both apply the same rules (`judgeSave`): a
 * save never replaces another workflow; an existing one is replaced only with `overwrite` or at the
 * version the caller read. The registry is refreshed after each change, so it is served at once.
 */
export interface RuntimeWorkflows {
  /** The source saves land in, and the only one rename and delete act on. */
  readonly kind: SourceKind;
  /** How messages name it. */
  readonly where: string;
  /** The path a file name would be saved at; refuses names that point elsewhere or that no source serves. */
  target(fileName: string): string;
  save(request: SaveRequest): Promise<SaveOutcome>;
  rename(request: RenameRequest): Promise<{ path: string; version: string }>;
  /** Removes a workflow of this source. */
  remove(entry: RegistryEntry, id: string, principal: string): Promise<void>;
}

/** What a save would land on: what is there now under its name and under its id. */
export interface SaveSite {
  id: string;
  file: string;
  overwrite?: boolean | undefined;
  expectedVersion?: string | undefined;
  /** Where the source is, for messages ("the runtime dir"). */
  where: string;
  /** Definitions stored under the same name, ignoring case (and the id each holds, when readable). */
  occupants: { file: string; id: string | undefined }[];
  /** Something unidentified (not a definition the server read) is stored under the name. */
  unidentified: boolean;
  /** The definition with the same id in this source, and its current version (read when needed). */
  existing?: { file: string; version: () => Promise<string | undefined> } | undefined;
}

/**
 * The rules of a save, for files and the database alike: a definition holding another workflow is
 * never replaced, whatever `overwrite` says; something unidentified only with `overwrite`; an
 * existing workflow with the same id only with `overwrite` or an `expectedVersion` equal to its
 * current version. Fails with `workflow_conflict` saying which.
 */
export async function judgeSave(site: SaveSite): Promise<void> {
  const { id, where } = site;
  for (const occupant of site.occupants) {
    if (occupant.id !== undefined && occupant.id !== id) {
      fail({
        code: 'workflow_conflict',
        message: 'Conflict',
        workflowId: id,
        path: occupant.file,
        details: `${basename(occupant.file)} holds workflow "${occupant.id}"; choose another file_name, or rename or delete "${occupant.id}" first`,
      });
    }
  }
  if (site.unidentified && !site.overwrite) {
    fail({
      code: 'workflow_conflict',
      message: 'Conflict',
      workflowId: id,
      path: site.file,
      details: `${basename(site.file)} already exists in ${where} and is not a workflow the server has read; pass overwrite: true to replace it`,
    });
  }
  const existing = site.existing;
  if (existing && !site.overwrite && site.expectedVersion === undefined) {
    fail({
      code: 'workflow_conflict',
      message: 'Conflict',
      workflowId: id,
      path: existing.file,
      details: `workflow "${id}" already exists at ${existing.file}; pass overwrite: true to replace it`,
    });
  }
  if (site.expectedVersion !== undefined) {
    const current = existing ? await existing.version() : undefined;
    if (current !== site.expectedVersion) {
      fail({
        code: 'workflow_conflict',
        message: 'Conflict',
        workflowId: id,
        ...(existing ? { path: existing.file } : {}),
        details: existing
          ? `workflow "${id}" changed since version ${site.expectedVersion.slice(0, 12)}…; it is now ${current?.slice(0, 12)}…`
          : `workflow "${id}" does not exist in ${where}, so it cannot be at version ${site.expectedVersion.slice(0, 12)}…`,
      });
    }
  }
}

const idOf = (e: RegistryEntry) => (e.status === 'valid' ? e.workflow.id : e.id);

function renamedExists(id: string, where: string): never {
  fail({
    code: 'workflow_conflict',
    message: 'Conflict',
    workflowId: id,
    details: `a workflow "${id}" already exists in ${where}`,
  });
}

/**
 * The runtime dir: files written through a temp file, fsync and rename. Check-then-write is
 * serialized by the caller within the process; processes sharing the dir see each other's files.
 */
export class FileRuntimeWorkflows implements RuntimeWorkflows {
  readonly kind = 'runtime';
  readonly where = 'the runtime dir';

  constructor(
    private readonly dir: string,
    private readonly registry: WorkflowRegistry,
  ) {}

  target(fileName: string): string {
    return runtimeFile(this.dir, fileName);
  }

  /** What is stored under a file's name (compared ignoring case, as some file systems do). */
  private async site(file: string): Promise<Pick<SaveSite, 'occupants' | 'unidentified'>> {
    const name = basename(file).toLowerCase();
    const occupants = this.registry
      .filesOf(this.kind)
      .filter((e) => basename(e.file).toLowerCase() === name)
      .map((e) => ({ file: e.file, id: idOf(e) }));
    const unidentified =
      occupants.some((o) => o.id === undefined) ||
      (occupants.length === 0 &&
        (await lstat(file).then(
          () => true,
          () => false,
        )));
    return { occupants, unidentified };
  }

  async save(request: SaveRequest): Promise<SaveOutcome> {
    const { id, content } = request;
    const file = this.target(request.fileName ?? `${id}${extensionFor(request.format)}`);
    await this.registry.ready();
    const existing = this.registry.inSource(this.kind, id);
    await judgeSave({
      id,
      file,
      overwrite: request.overwrite,
      expectedVersion: request.expectedVersion,
      where: this.where,
      ...(await this.site(file)),
      existing: existing && {
        file: existing.file,
        version: async () => contentVersion(await this.registry.readSource(existing)),
      },
    });
    await changeRuntimeDir(this.dir, async () => {
      await writeAtomically(file, content);
      if (existing && existing.file !== file) await unlink(existing.file).catch(() => undefined);
    });
    await this.registry.refresh();
    return { path: file, version: contentVersion(content), created: existing === undefined };
  }

  async rename({ entry, newId, content }: RenameRequest): Promise<{ path: string; version: string }> {
    const target = this.target(`${newId}${extname(entry.file) || extensionFor(entry.format)}`);
    if (target !== entry.file) {
      await judgeSave({ id: newId, file: target, where: this.where, ...(await this.site(target)) });
    }
    await changeRuntimeDir(this.dir, async () => {
      await writeAtomically(target, content);
      if (target !== entry.file) await unlink(entry.file);
    });
    await this.registry.refresh();
    return { path: target, version: contentVersion(content) };
  }

  async remove(entry: RegistryEntry): Promise<void> {
    await changeRuntimeDir(this.dir, () => unlink(entry.file));
    await this.registry.refresh();
  }
}

/**
 * The workflows agents save, kept in the database every replica shares (PostgreSQL). Each change is
 * one serializable transaction that reads what is stored under the name and the id and applies
 * `judgeSave` to it, so of two replicas saving the same workflow at once, one wins and the other
 * gets the conflict it would get one after the other. Every replica hears of the change (LISTEN) and
 * reloads it; the saving one at once.
 */
export class DatabaseRuntimeWorkflows implements RuntimeWorkflows {
  readonly kind = 'database';
  readonly where: string;

  constructor(
    private readonly dir: string,
    private readonly documents: RuntimeDocumentStore,
    private readonly registry: WorkflowRegistry,
  ) {
    this.where = 'the shared database';
  }

  private path(name: string): string {
    return `${this.dir}/${name}`;
  }

  private nameOf(entry: RegistryEntry): string {
    return entry.file.startsWith(`${this.dir}/`)
      ? entry.file.slice(this.dir.length + 1)
      : basename(entry.file);
  }

  target(fileName: string): string {
    checkFileName(fileName, `${this.where} (${this.dir})`);
    return this.path(fileName);
  }

  async save(request: SaveRequest): Promise<SaveOutcome> {
    const { id, content } = request;
    const name = request.fileName ?? `${id}${extensionFor(request.format)}`;
    const file = this.target(name);
    const outcome = await this.documents.transaction(async (tx) => {
      const found = await tx.find('workflow', { name, key: id });
      const existing = found.find((d) => d.key === id);
      await judgeSave({
        id,
        file,
        overwrite: request.overwrite,
        expectedVersion: request.expectedVersion,
        where: this.where,
        occupants: found
          .filter((d) => d.name.toLowerCase() === name.toLowerCase())
          .map((d) => ({ file: this.path(d.name), id: d.key })),
        unidentified: false,
        existing: existing && { file: this.path(existing.name), version: async () => existing.version },
      });
      if (existing && existing.name !== name) await tx.remove('workflow', existing.name);
      const doc = await tx.put({ kind: 'workflow', name, key: id, content, updated_by: request.principal });
      return { path: file, version: doc.version, created: existing === undefined };
    });
    await this.registry.refresh();
    return outcome;
  }

  async rename({ entry, newId, content, readVersion, principal }: RenameRequest) {
    const oldId = entry.workflow.id;
    const oldName = this.nameOf(entry);
    const name = `${newId}${extname(oldName) || extensionFor(entry.format)}`;
    const file = this.target(name);
    const outcome = await this.documents.transaction(async (tx) => {
      const current = await tx.get('workflow', oldName);
      if (current === undefined || current.key !== oldId)
        fail({ code: 'workflow_not_found', message: 'Workflow not found', workflowId: oldId });
      if (current.version !== readVersion) {
        fail({
          code: 'workflow_conflict',
          message: 'Conflict',
          workflowId: oldId,
          path: entry.file,
          details: `workflow "${oldId}" changed while it was being renamed; read it again and retry`,
        });
      }
      const found = (await tx.find('workflow', { name, key: newId })).filter((d) => d.name !== oldName);
      if (found.some((d) => d.key === newId)) renamedExists(newId, this.where);
      await judgeSave({
        id: newId,
        file,
        where: this.where,
        occupants: found.map((d) => ({ file: this.path(d.name), id: d.key })),
        unidentified: false,
      });
      await tx.remove('workflow', oldName);
      const doc = await tx.put({ kind: 'workflow', name, key: newId, content, updated_by: principal });
      return { path: file, version: doc.version };
    });
    await this.registry.refresh();
    return outcome;
  }

  async remove(entry: RegistryEntry, id: string): Promise<void> {
    const name = this.nameOf(entry);
    await this.documents.transaction(async (tx) => {
      const current = await tx.get('workflow', name);
      // Another replica removed or renamed it meanwhile.
      if (current === undefined || current.key !== id)
        fail({ code: 'workflow_not_found', message: 'Workflow not found', workflowId: id });
      await tx.remove('workflow', name);
    });
    await this.registry.refresh();
  }
}
