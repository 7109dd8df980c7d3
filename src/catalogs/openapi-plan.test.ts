import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { DomainFailure } from '../engine/errors.js';
import { type LoadedDocument, parseOpenApi } from './openapi-load.js';
import { type CatalogCommand, type ImportPlan, planImport } from './openapi-plan.js';

const fixture = (name: string) =>
  readFileSync(fileURLToPath(new URL(`../../test/fixtures/openapi/${name}`, import.meta.url)), 'utf8');

const tasksText = fixture('tasks-api.yaml');
const petstoreText = fixture('petstore-v2.json');

/** A minimal OpenAPI 3.0 document around the given paths. */
function oas3(paths: unknown, extra: Record<string, unknown> = {}): string {
  const servers = [{ url: 'https://api.example.com' }];
  return JSON.stringify({ openapi: '3.0.3', info: { title: 'T', version: '1' }, servers, paths, ...extra });
}

const ok = { '200': { description: 'ok' } };

async function plan(
  text: string,
  options: { title: string; vendor?: string; base_url?: string } = { title: 'T' },
) {
  const doc = await parseOpenApi(text);
  expect(doc.violations).toEqual([]);
  return planImport(doc, options);
}

function command(p: ImportPlan, name: string): CatalogCommand {
  const found = p.commands.find((c) => c.name === name);
  if (!found) throw new Error(`no command ${name} in ${p.commands.map((c) => c.name).join(', ')}`);
  return found;
}

describe('planImport: commands', () => {
  it('turns every operation of the 3.0 document into a command', async () => {
    const p = await plan(tasksText, { title: 'Tasks API' });
    expect(p.commands.map((c) => [c.name, c.group, c.method, c.path, c.idempotent])).toEqual([
      ['list-projects', 'projects', 'GET', '/projects', true],
      ['list-tasks', 'tasks', 'GET', '/projects/{projectId}/tasks', true],
      ['create-task', 'tasks', 'POST', '/projects/{projectId}/tasks', false],
      ['get-task', 'tasks', 'GET', '/tasks/{taskId}', true],
      ['update-task', 'tasks', 'PUT', '/tasks/{taskId}', true],
      ['delete-task', 'tasks', 'DELETE', '/tasks/{taskId}', true],
      ['start-export', 'exports', 'POST', '/exports', false],
      ['get-export', 'exports', 'GET', '/exports/{jobId}', true],
    ]);
    expect(p.warnings).toEqual([]);
  });

  it('merges path-level parameters and keeps the operation ones', async () => {
    const p = await plan(tasksText);
    expect(command(p, 'list-tasks').parameters).toEqual([
      { name: 'projectId', in: 'path', required: true, schema: { type: 'string' } },
      {
        name: 'status',
        in: 'query',
        required: false,
        schema: { type: 'string', enum: ['open', 'done'] },
        description: 'Only tasks in this state',
      },
    ]);
    expect(command(p, 'delete-task').parameters.map((x) => x.name)).toEqual(['taskId']);
  });

  it('lets an operation parameter override the path-level one of the same name', async () => {
    const p = await plan(
      oas3({
        '/items/{id}': {
          parameters: [
            { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
            { name: 'verbose', in: 'query', schema: { type: 'boolean' } },
          ],
          get: {
            parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'integer' } }],
            responses: ok,
          },
        },
      }),
    );
    expect(p.commands[0]?.parameters).toEqual([
      { name: 'verbose', in: 'query', required: false, schema: { type: 'boolean' } },
      { name: 'id', in: 'path', required: true, schema: { type: 'integer' } },
    ]);
  });

  it('dereferences body and response schemas', async () => {
    const p = await plan(tasksText);
    const create = command(p, 'create-task');
    expect(create.body_required).toBe(true);
    expect(create.body_schema).toEqual({
      type: 'object',
      required: ['title'],
      properties: { title: { type: 'string' }, description: { type: 'string' } },
    });
    // The first 2xx response (201 here), with nested $refs resolved too.
    expect(create.response_schema).toMatchObject({
      properties: { status: { type: 'string', enum: ['open', 'done'] } },
    });
    expect(command(p, 'get-export').response_schema).toMatchObject({
      properties: { status: { enum: ['pending', 'running', 'done', 'failed'] } },
    });
    expect(command(p, 'start-export').response_schema).toMatchObject({
      properties: { job_id: { type: 'string' } },
    });
    const del = command(p, 'delete-task');
    expect(del.body_schema).toBeUndefined();
    expect(del.response_schema).toBeUndefined();
    expect(del.body_required).toBe(false);
    // Copies: changing one command's schema does not change another's.
    (create.body_schema as { type: string }).type = 'changed';
    expect(command(p, 'update-task').body_schema).toMatchObject({ type: 'object' });
  });

  it('summarises from summary, else the first line of the description, else method and path', async () => {
    const p = await plan(
      oas3({
        '/a': {
          get: { summary: ' List A ', responses: ok },
          post: { description: '\nCreate an A.\nMore text.', responses: ok },
          delete: { responses: ok },
        },
      }),
    );
    expect(p.commands.map((c) => c.summary)).toEqual(['List A', 'Create an A.', 'DELETE /a']);
    expect(command(await plan(tasksText), 'get-task').summary).toBe('Fetch one task.');
  });

  it('names commands without operationId from method and path, and groups by path segment', async () => {
    const p = await plan(
      oas3({
        '/user-accounts/{accountId}/keys': {
          parameters: [{ name: 'accountId', in: 'path', required: true, schema: { type: 'string' } }],
          get: { responses: ok },
          post: { tags: ['API Keys'], responses: ok },
        },
        '/': { get: { responses: ok } },
      }),
    );
    expect(p.commands.map((c) => [c.name, c.group])).toEqual([
      ['get-user-accounts-account-id-keys', 'user-accounts'],
      ['post-user-accounts-account-id-keys', 'api-keys'],
      ['get', 'default'],
    ]);
  });

  it('makes clashing names unique with a warning', async () => {
    const p = await plan(
      oas3({
        '/a': { get: { operationId: 'listThings', responses: ok } },
        '/b': { get: { operationId: 'list_things', responses: ok } },
        '/c': { get: { operationId: 'list-things', responses: ok } },
      }),
    );
    expect(p.commands.map((c) => c.name)).toEqual(['list-things', 'list-things-2', 'list-things-3']);
    expect(p.warnings).toEqual([
      expect.stringContaining('"list-things-2"'),
      expect.stringContaining('"list-things-3"'),
    ]);
  });

  it('skips cookie parameters and TRACE operations with warnings', async () => {
    const p = await plan(
      oas3({
        '/a': {
          get: {
            parameters: [
              { name: 'session', in: 'cookie', schema: { type: 'string' } },
              { name: 'X-Trace', in: 'header', required: true, schema: { type: 'string' } },
            ],
            responses: ok,
          },
          trace: { responses: ok },
        },
      }),
    );
    expect(p.commands).toHaveLength(1);
    expect(p.commands[0]?.parameters).toEqual([
      { name: 'X-Trace', in: 'header', required: true, schema: { type: 'string' } },
    ]);
    expect(p.warnings).toEqual([
      expect.stringContaining('cookie parameter "session"'),
      expect.stringContaining('TRACE'),
    ]);
  });

  it('warns about a request body that is not JSON', async () => {
    const p = await plan(
      oas3({
        '/upload': {
          post: {
            requestBody: {
              required: true,
              content: { 'multipart/form-data': { schema: { type: 'object' } } },
            },
            responses: ok,
          },
        },
      }),
    );
    expect(p.commands[0]).toMatchObject({ body_required: true });
    expect(p.commands[0]?.body_schema).toBeUndefined();
    expect(p.warnings).toEqual([expect.stringContaining('multipart/form-data')]);
  });

  it('reads Swagger 2.0 parameters, body and responses', async () => {
    const p = await plan(petstoreText, { title: 'Petstore' });
    expect(p.commands.map((c) => [c.name, c.group, c.method, c.idempotent])).toEqual([
      ['list-pets', 'pet', 'GET', true],
      ['add-pet', 'pet', 'POST', false],
      ['get-pet-by-id', 'pet', 'GET', true],
      ['delete-pet', 'pet', 'DELETE', true],
    ]);
    expect(command(p, 'list-pets').parameters).toEqual([
      { name: 'limit', in: 'query', required: false, schema: { type: 'integer', format: 'int32' } },
    ]);
    const add = command(p, 'add-pet');
    expect(add.parameters).toEqual([]);
    expect(add.body_required).toBe(true);
    expect(add.body_schema).toEqual({
      type: 'object',
      required: ['name'],
      properties: { name: { type: 'string' }, tag: { type: 'string' } },
    });
    expect(command(p, 'get-pet-by-id').parameters).toEqual([
      { name: 'petId', in: 'path', required: true, schema: { type: 'integer', format: 'int64' } },
    ]);
    expect(command(p, 'delete-pet').parameters.map((x) => [x.name, x.in])).toEqual([
      ['petId', 'path'],
      ['X-Request-Id', 'header'],
    ]);
    expect(command(p, 'get-pet-by-id').response_schema).toMatchObject({ required: ['id', 'name'] });
  });

  it('refuses a document that did not load', () => {
    const bad: LoadedDocument = {
      kind: 'unknown',
      document: null,
      operation_count: 0,
      warnings: [],
      violations: [{ path: '', rule: 'openapi', message: 'nope' }],
      valid: false,
    };
    try {
      planImport(bad, { title: 'X' });
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(DomainFailure);
      expect((error as DomainFailure).error).toMatchObject({
        code: 'catalog_invalid',
        violations: bad.violations,
      });
    }
  });
});

describe('planImport: providers', () => {
  it('offers list operations as providers', async () => {
    const p = await plan(tasksText);
    expect(p.providers).toEqual([
      { command: 'list-projects', value_field: 'id', label_field: 'name', required_parameters: [] },
      {
        command: 'list-tasks',
        value_field: 'id',
        label_field: 'title',
        required_parameters: ['projectId'],
        items_path: 'items',
      },
    ]);
    const pets = await plan(petstoreText);
    expect(pets.providers).toEqual([
      { command: 'list-pets', value_field: 'id', label_field: 'name', required_parameters: [] },
    ]);
  });

  it('picks value and label fields by preference, then the first property', async () => {
    const list = (properties: Record<string, unknown>, wrap?: string) => {
      const array = { type: 'array', items: { type: 'object', properties } };
      const schema = wrap
        ? { type: 'object', properties: { [wrap]: array, count: { type: 'integer' } } }
        : array;
      return { description: 'ok', content: { 'application/json': { schema } } };
    };
    const p = await plan(
      oas3({
        '/a': { get: { operationId: 'a', responses: { '200': list({ slug: {}, display_name: {} }) } } },
        '/b': { get: { operationId: 'b', responses: { '200': list({ code: {}, color: {} }, 'data') } } },
        '/c': { get: { operationId: 'c', responses: { '200': list({ key: {}, name: {}, id: {} }) } } },
        // Not providers: not GET, no list, two lists, a list of strings, no properties.
        '/d': { post: { operationId: 'd', responses: { '200': list({ id: {} }) } } },
        '/e': {
          get: {
            operationId: 'e',
            responses: {
              '200': {
                description: 'ok',
                content: {
                  'application/json': {
                    schema: {
                      type: 'object',
                      properties: {
                        a: { type: 'array', items: { type: 'object', properties: { id: {} } } },
                        b: { type: 'array', items: { type: 'object', properties: { id: {} } } },
                      },
                    },
                  },
                },
              },
            },
          },
        },
        '/f': {
          get: {
            operationId: 'f',
            responses: {
              '200': {
                description: 'ok',
                content: { 'application/json': { schema: { type: 'array', items: { type: 'string' } } } },
              },
            },
          },
        },
        '/g': { get: { operationId: 'g', responses: { '200': list({}) } } },
      }),
    );
    expect(p.providers).toEqual([
      { command: 'a', value_field: 'slug', label_field: 'display_name', required_parameters: [] },
      { command: 'b', value_field: 'code', label_field: 'code', required_parameters: [], items_path: 'data' },
      { command: 'c', value_field: 'id', label_field: 'name', required_parameters: [] },
    ]);
  });

  it('sees item properties composed with allOf', async () => {
    const p = await plan(
      oas3(
        {
          '/users': {
            get: {
              operationId: 'listUsers',
              responses: {
                '200': {
                  description: 'ok',
                  content: {
                    'application/json': {
                      schema: { type: 'array', items: { $ref: '#/components/schemas/User' } },
                    },
                  },
                },
              },
            },
          },
        },
        {
          components: {
            schemas: {
              Base: { type: 'object', properties: { id: { type: 'integer' } } },
              User: {
                allOf: [{ $ref: '#/components/schemas/Base' }, { properties: { title: { type: 'string' } } }],
              },
            },
          },
        },
      ),
    );
    expect(p.providers).toEqual([
      { command: 'list-users', value_field: 'id', label_field: 'title', required_parameters: [] },
    ]);
  });
});

describe('planImport: auth and base URL', () => {
  it('detects bearer, API key and basic authentication', async () => {
    expect((await plan(tasksText)).auth).toEqual({ type: 'bearer' });
    expect((await plan(petstoreText)).auth).toEqual({ type: 'api_key', header: 'X-Api-Key' });
    const basic = await plan(
      oas3(
        { '/a': { get: { security: [{ creds: [] }], responses: ok } } },
        { components: { securitySchemes: { creds: { type: 'http', scheme: 'basic' } } } },
      ),
    );
    expect(basic.auth).toEqual({ type: 'basic' });
    const v2basic = JSON.parse(petstoreText);
    v2basic.securityDefinitions = { b: { type: 'basic' } };
    v2basic.security = [{ b: [] }];
    expect((await plan(JSON.stringify(v2basic))).auth).toEqual({ type: 'basic' });
    expect((await plan(oas3({}))).auth).toBeNull();
  });

  it('warns about schemes it cannot use and prefers the one the document requires', async () => {
    const p = await plan(
      oas3(
        {},
        {
          security: [{ cookieKey: [] }, { headerKey: [] }],
          components: {
            securitySchemes: {
              bearer: { type: 'http', scheme: 'bearer' },
              cookieKey: { type: 'apiKey', in: 'cookie', name: 'sid' },
              headerKey: { type: 'apiKey', in: 'header', name: 'X-Key' },
            },
          },
        },
      ),
    );
    expect(p.auth).toEqual({ type: 'api_key', header: 'X-Key' });
    expect(p.warnings).toEqual(expect.arrayContaining([expect.stringContaining('"cookieKey"')]));
  });

  it('takes base_url from the option, the first server, or host and basePath', async () => {
    const tasks = await parseOpenApi(tasksText);
    expect(planImport(tasks, { title: 'T' }).base_url).toBe('http://127.0.0.1:0/api');
    expect(planImport(tasks, { title: 'T', base_url: 'http://127.0.0.1:4567/api' }).base_url).toBe(
      'http://127.0.0.1:4567/api',
    );
    expect((await plan(petstoreText)).base_url).toBe('https://petstore.example.com/v2');

    const relative = await plan(oas3({}, { servers: [{ url: '/api/v1' }] }));
    expect(relative.base_url).toBeNull();
    expect(relative.warnings).toEqual(expect.arrayContaining([expect.stringContaining('"/api/v1"')]));

    const templated = await plan(
      oas3(
        {},
        { servers: [{ url: 'https://{region}.example.com/', variables: { region: { default: 'eu' } } }] },
      ),
    );
    expect(templated.base_url).toBe('https://eu.example.com');

    const none = await plan(oas3({}, { servers: [] }));
    expect(none.base_url).toBeNull();
    expect(none.warnings).toEqual(expect.arrayContaining([expect.stringContaining('base_url')]));

    const noHost = JSON.parse(petstoreText);
    delete noHost.host;
    const v2 = await plan(JSON.stringify(noHost));
    expect(v2.base_url).toBeNull();
    expect(v2.warnings).toEqual(expect.arrayContaining([expect.stringContaining('no host')]));
  });

  it('carries title and vendor', async () => {
    const doc = await parseOpenApi(tasksText);
    expect(planImport(doc, { title: 'Tasks', vendor: 'Acme' })).toMatchObject({
      title: 'Tasks',
      vendor: 'Acme',
    });
    expect(planImport(doc, { title: 'Tasks' }).vendor).toBeNull();
  });
});
