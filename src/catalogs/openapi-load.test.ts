import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { DomainFailure } from '../engine/errors.js';
import { linePointers, MAX_DOCUMENT_BYTES, parseOpenApi } from './openapi-load.js';
import { planImport } from './openapi-plan.js';

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

afterEach(() => {
  vi.restoreAllMocks();
});

describe('parseOpenApi', () => {
  it('reads an OpenAPI 3.0 YAML document', async () => {
    const doc = await parseOpenApi(tasksText);
    expect(doc).toMatchObject({
      kind: 'openapi_3',
      operation_count: 8,
      valid: true,
      violations: [],
      warnings: [],
    });
    // Dereferenced: no $ref is left.
    expect(JSON.stringify(doc.document)).not.toContain('$ref');
  });

  it('reads a Swagger 2.0 JSON document', async () => {
    const doc = await parseOpenApi(petstoreText);
    expect(doc).toMatchObject({ kind: 'openapi_2', operation_count: 4, valid: true, violations: [] });
  });

  it('reports a broken document as violations with JSON pointers', async () => {
    const doc = await parseOpenApi(fixture('broken.yaml'));
    expect(doc.kind).toBe('openapi_3');
    expect(doc.valid).toBe(false);
    expect(doc.violations).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          path: '/paths/~1tasks~1{taskId}/get/responses/200/content/application~1json/schema',
          rule: 'openapi',
          message: expect.stringContaining('#/components/schemas/Missing'),
        }),
        expect.objectContaining({
          path: '/paths/~1tasks/get',
          rule: 'openapi',
          message: expect.stringContaining("'responses'"),
        }),
      ]),
    );
    expect(() => planImport(doc, { title: 'Broken' })).toThrow(DomainFailure);
  });

  it('points schema errors at the offending value', async () => {
    const doc = await parseOpenApi(oas3({ '/a': { get: { bogus: 1, responses: ok } } }));
    expect(doc.violations).toEqual([
      expect.objectContaining({ path: '/paths/~1a/get/bogus', rule: 'openapi' }),
    ]);
    const typed = await parseOpenApi(oas3({ '/a': { get: { responses: { '200': { description: 5 } } } } }));
    expect(typed.violations).toEqual([
      expect.objectContaining({ path: '/paths/~1a/get/responses/200/description', rule: 'openapi' }),
    ]);
  });

  it('reports specification rules the schema cannot express', async () => {
    const doc = await parseOpenApi(oas3({ '/a/{id}': { get: { responses: ok } } }));
    expect(doc.valid).toBe(false);
    expect(doc.violations).toEqual([
      expect.objectContaining({
        path: '/paths/~1a~1{id}/get',
        rule: 'openapi',
        message: expect.stringContaining('{id}'),
      }),
    ]);
  });

  it('says kind unknown for JSON that is not OpenAPI', async () => {
    const doc = await parseOpenApi('{"name": "not an api", "version": 1}');
    expect(doc.kind).toBe('unknown');
    expect(doc.valid).toBe(false);
    expect(doc.violations).toEqual([expect.objectContaining({ path: '', rule: 'openapi' })]);
    for (const text of ['', '[1, 2]', '"openapi"', 'openapi: 4.0.0']) {
      const other = await parseOpenApi(text);
      expect(other.kind).toBe('unknown');
      expect(other.violations).toHaveLength(1);
    }
  });

  it('returns syntax errors with a line for text that does not parse', async () => {
    const doc = await parseOpenApi('openapi: 3.0.3\ninfo: {title: T\n');
    expect(doc.kind).toBe('unknown');
    expect(doc.document).toBeNull();
    expect(doc.violations[0]).toMatchObject({ rule: 'syntax', line: expect.any(Number) });
    const json = await parseOpenApi('{"openapi": "3.0.3",,}');
    expect(json.violations[0]).toMatchObject({ rule: 'syntax', message: expect.stringContaining('JSON') });
  });

  it('reads YAML flow style and a leading byte-order mark', async () => {
    const flow = await parseOpenApi("{openapi: 3.0.3, info: {title: T, version: '1'}, paths: {}}");
    expect(flow).toMatchObject({ kind: 'openapi_3', valid: true });
    const bom = await parseOpenApi(`\uFEFF${petstoreText}`);
    expect(bom).toMatchObject({ kind: 'openapi_2', valid: true });
  });

  it('refuses text over 5 MiB before parsing it', async () => {
    const big = `${oas3({})}\n${' '.repeat(MAX_DOCUMENT_BYTES)}`;
    const doc = await parseOpenApi(big);
    expect(doc.valid).toBe(false);
    expect(doc.violations).toEqual([expect.objectContaining({ rule: 'maxSize', path: '' })]);
    // Multi-byte characters count by their UTF-8 size.
    const wide = `# ${'é'.repeat(MAX_DOCUMENT_BYTES / 2)}\n${tasksText}`;
    expect(wide.length).toBeLessThan(MAX_DOCUMENT_BYTES);
    expect((await parseOpenApi(wide)).violations[0]?.rule).toBe('maxSize');
  });

  it('does not fetch an external http $ref', async () => {
    let requests = 0;
    const server = createServer((_req, res) => {
      requests++;
      res.setHeader('content-type', 'application/json');
      res.end('{"type": "object"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const fetchSpy = vi.spyOn(globalThis, 'fetch');
    try {
      const { port } = server.address() as AddressInfo;
      const url = `http://127.0.0.1:${port}/schemas/task.json`;
      const doc = await parseOpenApi(
        oas3({
          '/a': {
            get: {
              responses: {
                '200': { description: 'ok', content: { 'application/json': { schema: { $ref: url } } } },
              },
            },
          },
        }),
      );
      expect(doc.valid).toBe(false);
      expect(doc.violations).toEqual([
        expect.objectContaining({
          rule: 'externalRef',
          path: '/paths/~1a/get/responses/200/content/application~1json/schema',
          actual: url,
        }),
      ]);
      expect(requests).toBe(0);
      expect(fetchSpy).not.toHaveBeenCalled();
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('does not read an external file $ref', async () => {
    const doc = await parseOpenApi(
      oas3({ '/a': { get: { responses: { '200': { $ref: 'package.json#/name' } } } } }),
    );
    expect(doc.violations).toEqual([
      expect.objectContaining({ rule: 'externalRef', path: '/paths/~1a/get/responses/200' }),
    ]);
  });

  it('accepts a document without operations, with a warning', async () => {
    const doc = await parseOpenApi(oas3({}));
    expect(doc).toMatchObject({ kind: 'openapi_3', operation_count: 0, valid: true });
    expect(doc.warnings).toEqual([expect.stringContaining('no operations')]);
    const p = planImport(doc, { title: 'Empty' });
    expect(p.commands).toEqual([]);
  });

  it('leaves circular references as $refs, with a warning', async () => {
    const doc = await parseOpenApi(
      oas3(
        {
          '/nodes': {
            get: {
              responses: {
                '200': {
                  description: 'ok',
                  content: { 'application/json': { schema: { $ref: '#/components/schemas/Node' } } },
                },
              },
            },
          },
        },
        {
          components: {
            schemas: {
              Node: { type: 'object', properties: { next: { $ref: '#/components/schemas/Node' } } },
            },
          },
        },
      ),
    );
    expect(doc.valid).toBe(true);
    expect(doc.warnings).toEqual([expect.stringContaining('circular $ref at /components/schemas/Node')]);
    const p = planImport(doc, { title: 'Nodes' });
    // JSON-serialisable: no cycle in the plan.
    expect(() => JSON.stringify(p)).not.toThrow();
  });
});

describe('linePointers', () => {
  it('gives one pointer per line of JSON.stringify(value, null, 2)', () => {
    const value = { a: [1, { 'b/c': [], d: {} }], e: 'x\ny', f: undefined, g: { h: null } };
    const lines = JSON.stringify(value, null, 2).split('\n');
    const pointers = linePointers(value);
    expect(pointers).toHaveLength(lines.length);
    expect(pointers[lines.findIndex((l) => l.includes('"b/c"'))]).toBe('/a/1/b~1c');
    expect(pointers[lines.findIndex((l) => l.includes('"h"'))]).toBe('/g/h');
  });
});
