#!/usr/bin/env node
// Validates every workflow file under a folder (for instance a copy of WorkRail's workflows/) with
// the built CLI (`dist/cli.js validate --json`), and prints one line per file: ok or the error count,
// then the warnings by rule. Exit code 1 when any file has an error.
//
//   node scripts/workrail-check.mjs <dir> [--verbose]
import { spawnSync } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, extname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const args = process.argv.slice(2);
const verbose = args.includes('--verbose');
const dir = args.find((a) => !a.startsWith('--'));
if (dir === undefined) {
  console.error('usage: node scripts/workrail-check.mjs <dir> [--verbose]');
  process.exit(2);
}
const root = resolve(dir);
const cli = join(dirname(fileURLToPath(import.meta.url)), '..', 'dist', 'cli.js');

const files = [];
const walk = (at) => {
  for (const entry of readdirSync(at, { withFileTypes: true })) {
    const path = join(at, entry.name);
    if (entry.isDirectory()) walk(path);
    else if (['.json', '.yaml', '.yml'].includes(extname(entry.name).toLowerCase())) files.push(path);
  }
};
walk(root);
files.sort();
if (files.length === 0) {
  console.error(`no .json, .yaml or .yml files under ${root}`);
  process.exit(2);
}

const run = spawnSync(process.execPath, [cli, 'validate', '--json', ...files], {
  encoding: 'utf8',
  maxBuffer: 64 * 1024 * 1024,
});
let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  console.error(`validate did not answer JSON (exit ${run.status}):\n${run.stderr}`);
  process.exit(2);
}

const warningRules = new Map();
let failed = 0;
for (const file of report.files) {
  const name = relative(root, file.file);
  const rules = new Map();
  for (const w of file.warnings) {
    const key = w.rule === 'workrailInert' ? `${w.rule}:${w.actual}` : w.rule;
    rules.set(key, (rules.get(key) ?? 0) + 1);
    warningRules.set(key, (warningRules.get(key) ?? 0) + 1);
  }
  const warned = [...rules].map(([rule, n]) => (n > 1 ? `${rule} x${n}` : rule)).join(', ');
  if (file.errors.length > 0) failed++;
  const status = file.errors.length === 0 ? 'ok   ' : `FAIL ${file.errors.length} error(s)`;
  console.log(`${status} ${name}${file.id ? ` (${file.id})` : ''}${warned ? `  warnings: ${warned}` : ''}`);
  for (const e of file.errors)
    console.log(`      error ${e.path || '/'}${e.line ? ` (line ${e.line})` : ''}: ${e.message} [${e.rule}]`);
  if (verbose)
    for (const w of file.warnings) console.log(`      warning ${w.path || '/'}: ${w.message} [${w.rule}]`);
}
console.log(`\n${report.files.length - failed} of ${report.files.length} files validate with zero errors.`);
if (warningRules.size > 0) {
  console.log('Warnings by rule (files):');
  for (const [rule, n] of [...warningRules].sort()) console.log(`  ${rule}: ${n}`);
}
process.exit(failed > 0 ? 1 : 0);
