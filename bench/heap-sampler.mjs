// Preloaded into a measured server (`node --import bench/heap-sampler.mjs dist/cli.js`) by
// bench/scenarios/step-allocation.mjs: V8's sampling heap profiler, counting objects a garbage
// collection has already freed too (what a step allocates, not what it keeps). SIGUSR2 starts
// sampling, the next SIGUSR2 stops it and writes the profile to WL_HEAP_SAMPLE_OUT. Measurement only:
// clients launch the server without it.
import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

const session = new Session();
session.connect();
const post = (method, params = {}) =>
  new Promise((resolve, reject) =>
    session.post(method, params, (error, result) => (error ? reject(error) : resolve(result))),
  );
let sampling = false;
process.on('SIGUSR2', async () => {
  if (!sampling) {
    sampling = true;
    await post('HeapProfiler.startSampling', {
      samplingInterval: Number(process.env.WL_HEAP_SAMPLE_INTERVAL ?? 1024),
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    process.stderr.write('[heap-sampler] started\n');
  } else {
    sampling = false;
    const { profile } = await post('HeapProfiler.stopSampling');
    writeFileSync(process.env.WL_HEAP_SAMPLE_OUT ?? 'heap.heapprofile', JSON.stringify(profile));
    process.stderr.write('[heap-sampler] written\n');
  }
});
