/**
 * The tracing section's ingest child: the relay's key pipeline ingesting Foo events in a process
 * of its own, with one tracing setting for its whole life, as a relay process has (the section
 * used to swap tracer providers within one process: after a run recording every span, the
 * pipeline's call sites had seen both span classes, which no relay process ever does). Prints one
 * JSON line: `{"eventsPerCpuS": N}`, the events of the last of its runs per CPU-second of the
 * process (user + system, every thread: the export and the garbage collector included).
 *
 *   node bench/ingest-child.ts --events N --ratio off|R --file F   (R in 0–1: tracing on, exported to F)
 */

import { parseArgs } from 'node:util';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { Controller } from '../core/contract/controller.ts';
import { tracerProviderOf } from '../core/tracing-sdk.ts';
import { controllers as registry } from '../examples/registry.ts';
import { KeyPipeline, planInformers } from '../relay/pipeline.ts';
import { quiet } from './support.ts';

const { values } = parseArgs({
  options: { events: { type: 'string' }, ratio: { type: 'string' }, file: { type: 'string' } },
});
const events = Number(values.events);
const keys = events / 20;
const provider =
  values.ratio === 'off'
    ? undefined
    : await tracerProviderOf('bench', {
        exporter: 'file',
        file: values.file as string,
        sampleRatio: Number(values.ratio),
      });
provider?.register();
setFlagsFromString('--expose-gc');
const collectGarbage = runInNewContext('gc') as () => void;
const foo = registry.find((c) => c.name === 'foo') as Controller;
const routes = planInformers([foo]).flatMap((p) => p.routes.filter((r) => r.primary));

/** One run through a fresh pipeline, until every key is published and its spans exported. */
async function eventsPerCpuS(): Promise<number> {
  const pipeline = new KeyPipeline({
    collapseMs: 250,
    publish: async () => 'm',
    primaryKeys: () => [],
    logger: quiet,
  });
  collectGarbage();
  const t0 = process.cpuUsage();
  for (let i = 0; i < events; i++)
    pipeline.handle(routes, {
      type: 'ADDED',
      object: {
        apiVersion: 'samplecontroller.k8s.io/v1alpha1',
        kind: 'Foo',
        metadata: { namespace: 'ns', name: `f${i % keys}`, resourceVersion: String(i), generation: 1 },
      },
    });
  await pipeline.flush();
  await provider?.forceFlush();
  pipeline.discard();
  const cpu = process.cpuUsage(t0);
  return events / ((cpu.user + cpu.system) / 1e6);
}

await eventsPerCpuS(); // warm up: the JIT, the exporter's first file write
await eventsPerCpuS();
console.log(JSON.stringify({ eventsPerCpuS: await eventsPerCpuS() }));
await provider?.shutdown();
