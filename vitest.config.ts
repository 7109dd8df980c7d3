import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // expect.poll waits for something a server or a browser does; its default of 1 s is a wall-clock
    // bound that a loaded machine can miss. Each poll ends as soon as what it waits for happens, so this
    // is a hang detector: 30 s, as two whole suites running side by side on 2 cores still met it.
    expect: { poll: { timeout: 30_000 } },
    pool: 'forks',
    // Vitest's default for `run` is one worker fewer than the cores: one file at a time on the 2-core CI
    // machines, with a core idle while a test waits on its server, its database or its browser. A test
    // file is I/O-bound often enough that one worker per core keeps both busy.
    maxWorkers: Math.max(2, availableParallelism()),
    reporters: ['default', './scripts/reliability-reporter.mjs', './scripts/summary-reporter.mjs'],
    // `npm run coverage`: what the in-process tests execute of src/ (a spawned dist/cli.js is not counted).
    coverage: {
      provider: 'v8',
      include: ['src/**/*.ts'],
      exclude: ['src/**/*.test.ts'],
      reporter: ['text-summary', 'json-summary'],
      reportsDirectory: 'coverage',
    },
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['src/**/*.test.ts'],
          // The unit tests beside the sources share one module graph per worker instead of importing it
          // again for each file (the import was a third of their time); they keep no state between files.
          isolate: false,
        },
      },
      {
        extends: true,
        // The suites under test/ start apps, servers, databases and browsers, each in a sandbox of its own
        // (directories, env, ports) that it removes afterwards, so they too share one module graph per
        // worker: importing the app again for each file was 30 s of a 220 s run.
        //
        // Their timeout is a hang detector, not a speed check: a test that starts servers waits on each one's
        // own signal (a line, an announced URL; test/helpers SPAWNED_WAIT_MS), and on a busy machine several
        // starts in one test took more than the 30 s the unit tests get.
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          isolate: false,
          testTimeout: 120_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
