// The processes' own memory on their /metrics (prom-client's default metrics), which the soak
// (soak/memory.ts) reads: the relay's registry and the reconcile's metrics server both serve the
// V8 heap in use, and a second server in one process registers nothing twice.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { serveMetrics } from '../../core/metrics.ts';
import { processMetricsRegistry } from '../../relay/metrics.ts';
import { externalMiB, heapUsedMiB } from '../../soak/memory.ts';

describe("the processes' memory on /metrics", () => {
  const servers: { close(): void }[] = [];
  after(() => {
    for (const s of servers) s.close();
  });

  it("the relay's registry holds the process metrics", async () => {
    const heap = heapUsedMiB(await processMetricsRegistry().metrics());
    assert.ok(heap !== undefined && heap > 1, `heap ${heap} MiB`);
  });

  it("the reconcile's /metrics serves the heap in use, from a second server too", async () => {
    for (let i = 0; i < 2; i++) {
      const { server, port } = await serveMetrics(0);
      servers.push(server);
      const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
      const heap = heapUsedMiB(text);
      assert.ok(heap !== undefined && heap > 1, `heap ${heap} MiB`);
      assert.match(text, /^process_resident_memory_bytes \d+/m);
      assert.ok((externalMiB(text) ?? 0) > 0, 'the external memory');
    }
  });
});
