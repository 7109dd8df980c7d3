import module from 'node:module';
import { setFlagsFromString } from 'node:v8';

// Node ≥ 22.1 keeps V8's compiled code of every module it loads on disk (in NODE_COMPILE_CACHE, else
// <tmpdir>/node-compile-cache) and reuses it on the next start instead of compiling the bundle again.
// Enabled before anything of ours loads, so every chunk is covered; NODE_DISABLE_COMPILE_CACHE=1 turns it
// off. What it buys is measured by bench/compile-cache.mjs (docs/benchmarks.md, "Compile cache").
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

// Clients launch `node dist/cli.js` with no node flags. Size-optimised V8 keeps peak RSS under 100 MB
// through bursts of calls (bench/), so it is switched on here, before anything much is allocated.
setFlagsFromString('--optimize-for-size');
// Under a steady stream of calls V8 doubles the young generation (two semi-spaces) up to 32 MB, all of
// it resident: the largest part of peak RSS above a bare Node. A growth factor of 1 keeps it at its
// start size (1 MB semi-spaces); scavenges come more often but stay short, and the bench's latencies
// did not move. V8 raises the factor back to its minimum of 2 whenever it configures a new isolate (each
// worker thread), so it is set again once a worker is running.
const KEEP_YOUNG_GENERATION = '--semi-space-growth-factor=1';
setFlagsFromString(KEEP_YOUNG_GENERATION);
process.on('worker', (worker) => worker.once('online', () => setFlagsFromString(KEEP_YOUNG_GENERATION)));
// TurboFan compiles on V8's background threads, and each thread's malloc arena keeps about as much
// memory as its largest compilation needed (13 MB over the 4 threads in the bench). Half the default
// inlining budget makes the largest graphs smaller: 4-5 MB less peak RSS, no measurable latency change.
setFlagsFromString('--max-inlined-bytecode-size-cumulative=460');
setFlagsFromString('--max-inlined-bytecode-size=230');

const argv = process.argv.slice(2);
// A stdio client gets `initialize` and `tools/list` answered from the answers recorded at build time
// while the rest of the server loads (see stdio-prelude.ts); everything else waits for the server.
const { startPrelude } = await import('../transports/stdio-prelude.js');
const prelude = startPrelude(argv, process.env, new URL('./prelude.json', import.meta.url));

// While the server loads, a stop signal ends a process that holds nothing yet, as the server would.
const early = () => process.exit(0);
process.on('SIGTERM', early);
process.on('SIGINT', early);

const load = async () => {
  const { run } = await import('./main.js');
  process.off('SIGTERM', early);
  process.off('SIGINT', early);
  run(argv, prelude);
};
if (prelude === undefined) await load();
else {
  // Loading the server holds the event loop for a while: it starts once the client has what it asks
  // for at start (tools/list answered, or any other request), or 20 ms after start at the latest.
  let loading = false;
  const start = () => {
    if (loading) return;
    loading = true;
    clearTimeout(timer);
    void load();
  };
  // Soon after start in any case: configuration that cannot work is refused at start (exit 2), not
  // when a client first writes.
  const timer = setTimeout(start, 20);
  prelude.onBusy = start;
  process.stdin.once('end', start);
}
