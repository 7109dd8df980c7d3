import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers/server.js';

/**
 * The layers of src/, lowest first. A module may import from its own layer and the ones below it,
 * never from a layer above (docs/development.md, "Architecture"). Top-level files are layers of their own.
 */
const LAYERS: readonly (readonly string[])[] = [
  // Logs, traces and metrics: any layer may record; telemetry imports none of them.
  ['telemetry'],
  ['model'],
  ['engine'],
  ['store'],
  ['workflows'],
  ['catalogs'],
  ['executions'],
  ['runs'],
  ['faces'],
  ['protocol'],
  ['config.ts', 'app.ts'],
  ['transports', 'dashboard'],
  ['cli'],
];

const SRC = join(ROOT, 'src');

function layerOf(file: string): number {
  const top = relative(SRC, file).split('/')[0] as string;
  const index = LAYERS.findIndex((names) => names.includes(top));
  if (index === -1) throw new Error(`${relative(ROOT, file)} is in no layer; add its folder to LAYERS`);
  return index;
}

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return path.endsWith('.ts') && !path.endsWith('.test.ts') ? [path] : [];
  });
}

const IMPORT = /^(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'|^\s*(?:await\s+)?import\('(\.[^']+)'\)/gm;

describe('architecture', () => {
  it('imports run one way: model <- engine <- store <- workflows <- catalogs <- executions <- runs <- faces <- protocol <- app <- transports <- cli', () => {
    const wrong: string[] = [];
    for (const file of sources(SRC)) {
      const text = readFileSync(file, 'utf8');
      for (const match of text.matchAll(IMPORT)) {
        const target = resolve(file, '..', (match[1] ?? match[2]) as string).replace(/\.js$/, '.ts');
        if (layerOf(target) > layerOf(file)) {
          wrong.push(`${relative(SRC, file)} imports ${relative(SRC, target)}`);
        }
      }
    }
    expect(wrong).toEqual([]);
  });

  it('a face never imports another face', () => {
    const wrong: string[] = [];
    for (const file of sources(join(SRC, 'faces'))) {
      const face = relative(join(SRC, 'faces'), file).split('/')[0] as string;
      for (const match of readFileSync(file, 'utf8').matchAll(IMPORT)) {
        const target = relative(join(SRC, 'faces'), resolve(file, '..', (match[1] ?? match[2]) as string));
        const other = target.split('/')[0] as string;
        const inAFace = target.includes('/') && !target.startsWith('..');
        if (inAFace && other !== face) wrong.push(`${relative(SRC, file)} imports faces/${target}`);
      }
    }
    expect(wrong).toEqual([]);
  });
});
