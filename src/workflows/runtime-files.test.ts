import { describe, expect, it } from 'vitest';
import { DomainFailure } from '../engine/errors.js';
import { changeRuntimeDir, fileNameProblem, runtimeFile } from './runtime-files.js';

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
    return undefined;
  } catch (error) {
    return error instanceof DomainFailure ? error.error.code : 'thrown';
  }
};

describe('workflow file names', () => {
  it('accepts plain names with a definition extension', () => {
    for (const name of ['alpha-flow.json', 'Release_2.yaml', 'a.b.yml', 'x1.JSON'])
      expect(fileNameProblem(name), name).toBeUndefined();
  });

  it('refuses hidden files, device names, encodings, look-alikes and control characters', () => {
    const refused = [
      '.hidden.json',
      'evil\n.json',
      'tab\t.json',
      'CON.json',
      'nul.yaml',
      'Com1.yml',
      'lpt9.json',
      'con.backup.json',
      '%2e%2e%2fescape.json',
      '\uFF0E\uFF0E\uFF0Fescape.json',
      'caf\u00e9.json',
      'a..json',
      'space name.json',
      'notes.txt',
      'trailing.json.',
      `${'x'.repeat(130)}.json`,
    ];
    for (const name of refused) expect(fileNameProblem(name), JSON.stringify(name)).toBeDefined();
  });

  it('paths are a security error, other bad names invalid params', () => {
    for (const name of [
      '../x.json',
      '/tmp/x.json',
      'sub/x.json',
      'sub\\x.json',
      'C:x.json',
      'c:/x.json',
      '..',
    ])
      expect(
        codeOf(() => runtimeFile('/srv/wf', name)),
        name,
      ).toBe('path_outside_runtime');
    for (const name of ['CON.json', '.x.json', 'a%2fb.json', 'evil\n.json'])
      expect(
        codeOf(() => runtimeFile('/srv/wf', name)),
        name,
      ).toBe('invalid_params');
    expect(runtimeFile('/srv/wf', 'ok-name.yaml')).toBe('/srv/wf/ok-name.yaml');
  });
});

describe('changeRuntimeDir', () => {
  const failing = (code: string) => () => Promise.reject(Object.assign(new Error(code), { code }));
  const codeAfter = async (code: string) =>
    changeRuntimeDir('/srv/wf', failing(code)).then(
      () => undefined,
      (error: unknown) => (error instanceof DomainFailure ? error.error : undefined),
    );

  it('names what went wrong with the file system', async () => {
    for (const code of ['EROFS', 'EACCES', 'EPERM'])
      expect(await codeAfter(code)).toMatchObject({
        code: 'runtime_dir_read_only',
        path: '/srv/wf',
        details: code,
      });
    for (const code of ['ENOSPC', 'EDQUOT', 'EFBIG'])
      expect(await codeAfter(code)).toMatchObject({ code: 'storage_full', details: code });
    expect(await codeAfter('EIO')).toMatchObject({ code: 'storage_error' });
  });

  it('lets results and domain failures through unchanged', async () => {
    expect(await changeRuntimeDir('/srv/wf', async () => 42)).toBe(42);
    const domain = new DomainFailure({ code: 'invalid_params', message: 'x', details: 'y' });
    await expect(changeRuntimeDir('/srv/wf', () => Promise.reject(domain))).rejects.toBe(domain);
  });
});
