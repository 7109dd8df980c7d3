import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { TasksApi, TOKEN } from '../../examples/tasks-api-server.mjs';
import type { DomainFailure } from '../engine/errors.js';
import { CatalogRegistry } from './catalog-registry.js';
import { CatalogService } from './catalog-service.js';
import { HostPolicy } from './host-policy.js';
import { CommandFailure } from './http-runner.js';

const SOURCE = fileURLToPath(new URL('../../test/fixtures/openapi/tasks-api.yaml', import.meta.url));
const TOKEN_ENV = 'WORKFLOWLOOKUP_CATALOG_TASKS_API_TOKEN';
const ORIGIN_ENV = 'WORKFLOWLOOKUP_CATALOG_TASKS_API_ORIGIN';

let api: TasksApi;
let attacker: TasksApi;
let dir: string;

beforeAll(async () => {
  api = new TasksApi();
  attacker = new TasksApi();
  await Promise.all([api.start(), attacker.start()]);
});

afterAll(async () => {
  await Promise.all([api.stop(), attacker.stop()]);
});

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'wl-catalogs-'));
  api.requests.length = 0;
  attacker.requests.length = 0;
  return () => rmSync(dir, { recursive: true, force: true });
});

function service(env: NodeJS.ProcessEnv = {}, registry = new CatalogRegistry(dir)): CatalogService {
  return new CatalogService({
    registry,
    env: { [TOKEN_ENV]: TOKEN, ...env },
    policy: new HostPolicy([`127.0.0.1:${api.port}`, `127.0.0.1:${attacker.port}`]),
    allowUrlSources: false,
    cwd: dir,
  });
}

const importAt = (s: CatalogService, baseUrl: string, confirm?: (q: string) => Promise<boolean>) =>
  s.import({ source: SOURCE, catalog_title: 'Tasks API', base_url: baseUrl, overwrite: true }, confirm);

async function getTask(s: CatalogService, taskId = 't1') {
  const found = await s.resolve('tasks-api get-task');
  if (!found) throw new Error('no command');
  return s.call(found.catalog, found.command, { params: { taskId }, timeoutMs: 5000, idempotencyKey: 'k' });
}

async function failure(promise: Promise<unknown>): Promise<CommandFailure> {
  try {
    await promise;
  } catch (error) {
    if (error instanceof CommandFailure) return error;
    throw error;
  }
  throw new Error('expected a CommandFailure');
}

describe('credential binding', () => {
  it('binds the credential at the first import and keeps it there when an overwrite moves the catalog', async () => {
    const s = service();
    const first = await importAt(s, api.baseUrl);
    expect(first.credentialBound).toBe(true);
    expect((await getTask(s)).status).toBe(200);

    const moved = await importAt(s, attacker.baseUrl);
    expect(moved.credentialBound).toBe(false);
    expect(moved.warnings.at(-1)).toContain(ORIGIN_ENV);
    expect(moved.catalog.config.credential_origin).toBe(`http://127.0.0.1:${api.port}`);
    const refused = await failure(getTask(s));
    expect(refused.reason).toBe('missing_credential');
    expect(refused.message).toContain('credential_unbound');
    expect(refused.message).toContain(`${ORIGIN_ENV}=http://127.0.0.1:${attacker.port}`);
    expect(attacker.requests).toEqual([]);

    // A new process reads the same files and refuses the same way.
    expect((await failure(getTask(service()))).reason).toBe('missing_credential');
    // Moving back to the bound origin needs nobody's confirmation.
    expect((await importAt(s, `${api.baseUrl}/`)).credentialBound).toBe(true);
    expect((await getTask(s)).status).toBe(200);
  });

  it('moves the binding only when the user confirms', async () => {
    const s = service();
    await importAt(s, api.baseUrl);
    const questions: string[] = [];
    const declined = await importAt(s, attacker.baseUrl, async (q) => {
      questions.push(q);
      return false;
    });
    expect(declined.credentialBound).toBe(false);
    expect(questions[0]).toContain(`http://127.0.0.1:${attacker.port}`);
    expect(questions[0]).toContain(TOKEN_ENV);
    const broken = await importAt(s, attacker.baseUrl, async () => {
      throw new Error('client went away');
    });
    expect(broken.credentialBound).toBe(false);
    const accepted = await importAt(s, attacker.baseUrl, async () => true);
    expect(accepted.credentialBound).toBe(true);
    expect((await getTask(s)).status).toBe(200);
    expect(attacker.requests.map((r) => r.headers.authorization)).toEqual([`Bearer ${TOKEN}`]);
  });

  it("lets the operator's origin setting decide, at import and at call time", async () => {
    await importAt(service(), api.baseUrl);
    const pinned = service({ [ORIGIN_ENV]: `http://127.0.0.1:${attacker.port}` });
    // The setting names another origin than the catalog's: nothing is sent.
    expect((await failure(getTask(pinned))).message).toContain('credential_unbound');
    expect(api.requests).toEqual([]);
    // Importing for the origin the operator named binds it without asking anyone.
    expect((await importAt(pinned, attacker.baseUrl)).credentialBound).toBe(true);
    expect((await getTask(pinned)).status).toBe(200);
    // Without the setting, the move was recorded as confirmed by the operator.
    expect((await getTask(service())).status).toBe(200);
    const typo = service({ [ORIGIN_ENV]: 'not a url' });
    expect((await failure(getTask(typo))).message).toContain('bound to no origin');
  });

  it('keeps the binding when the catalog is removed and imported again elsewhere', async () => {
    const s = service();
    await importAt(s, api.baseUrl);
    await s.remove('tasks-api', true);
    const again = await importAt(s, attacker.baseUrl);
    expect(again.credentialBound).toBe(false);
    expect((await failure(getTask(s))).reason).toBe('missing_credential');
    expect(attacker.requests).toEqual([]);
  });

  it("refuses an import that would reuse another catalog's credential for another origin", async () => {
    const s = service();
    const first = await importAt(s, api.baseUrl);
    // A catalog written by hand that reads the same variable for a different host.
    const config = JSON.parse(readFileSync(first.catalog.configPath, 'utf8'));
    writeFileSync(
      join(dir, 'copycat.json'),
      JSON.stringify({ ...config, id: 'copycat', title: 'Copycat', base_url: attacker.baseUrl }),
    );
    const fresh = service();
    try {
      await fresh.import({
        source: SOURCE,
        catalog_title: 'Tasks API',
        base_url: `${api.baseUrl}/v2`,
        overwrite: true,
      });
      expect.unreachable();
    } catch (error) {
      expect((error as DomainFailure).error).toMatchObject({ code: 'catalog_conflict', catalog: 'copycat' });
    }
  });

  it('treats catalogs imported before bindings existed as bound to their own origin', async () => {
    const s = service();
    const first = await importAt(s, api.baseUrl);
    const { credential_origin: _, ...legacy } = JSON.parse(readFileSync(first.catalog.configPath, 'utf8'));
    writeFileSync(first.catalog.configPath, JSON.stringify(legacy));
    rmSync(join(dir, '_credential-bindings.json'));
    const reloaded = service();
    expect((await getTask(reloaded)).status).toBe(200);
    // The legacy origin still counts when an overwrite tries to move it.
    expect((await importAt(reloaded, attacker.baseUrl)).credentialBound).toBe(false);
  });
});

describe('calls', () => {
  it('scrubs the credential from outputs, text and JSON, and from provider choices', async () => {
    const s = service({ WORKFLOWLOOKUP_CATALOG_OTHER_TOKEN: 'another-secret-9' });
    await importAt(s, api.baseUrl);
    const echoed = await getTask(s, 'echo');
    const text = JSON.stringify(echoed.output);
    expect(text).not.toContain(TOKEN);
    const output = echoed.output as Record<string, string>;
    for (const encoded of [output.header_base64, output.token_base64url]) {
      expect(encoded).toContain('***');
      for (const piece of String(encoded).split('***')) {
        expect(Buffer.from(piece, 'base64').toString('utf8')).not.toContain(TOKEN);
      }
    }
    expect(output.header_url).toBe('https://example.com/?auth=Bearer%20***');
    expect(echoed.output).toMatchObject({
      title: 'Echo of Bearer ***',
      nested: { '***': ['***', { again: 'x***x' }] },
    });
    const plain = await getTask(s, 'echo-text');
    expect(plain.output).toMatch(/^you sent Bearer \*\*\*; as base64 /);
    const choices = await s.providerChoices({ command: 'tasks-api list-projects' }, {}, {});
    expect(choices).toEqual({
      choices: [
        { value: 'p1', label: 'Alpha' },
        { value: 'p2', label: 'Beta' },
      ],
    });
  });

  it('follows redirects only under the base URL', async () => {
    const s = service();
    await importAt(s, api.baseUrl);
    const escaped = await failure(getTask(s, 'escape'));
    expect(escaped.reason).toBe('redirect');
    expect(escaped.message).toContain('/admin/keys');
    expect(api.requests.map((r) => r.url)).toEqual(['/api/tasks/escape']);
  });

  it('refuses private hosts that are not allowed, before any request', async () => {
    const s = new CatalogService({
      registry: new CatalogRegistry(dir),
      env: { [TOKEN_ENV]: TOKEN },
      policy: new HostPolicy(),
      allowUrlSources: false,
      cwd: dir,
    });
    await importAt(s, api.baseUrl);
    const refused = await failure(getTask(s));
    expect(refused.reason).toBe('host');
    expect(refused.message).toContain('WORKFLOWLOOKUP_ALLOW_PRIVATE_HOSTS');
    expect(api.requests).toEqual([]);
  });
});
