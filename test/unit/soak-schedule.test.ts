// The soak's fault schedule and memory fits (soak/faults.ts faultSchedule, soak/memory.ts slopeOf):
// each kind its count, the faults that restart a sampled process only in the first third (so that
// each then has one long life to fit), and each life of a process fitted on its own.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type FaultKind, faultSchedule } from '../../soak/faults.ts';
import { floorOf, LIFE_WARMUP_MS, type MemorySample, procStatus, slopeOf } from '../../soak/memory.ts';
import { seededRandom } from '../../soak/random.ts';

const kind = (name: string, restarts?: string): FaultKind => ({
  name,
  description: name,
  ...(restarts ? { restarts } : {}),
  inject: async () => undefined,
});
const api = ['watch-drop', 'compaction', 'http-500', 'latency', 'poison-key'].map((n) => kind(n));
const restarting = [kind('relay-kill', 'relay'), kind('function-kill', 'reconcile')];

describe('the soak: fault schedule', () => {
  it('injects each kind five times, the process restarts in the first third only', () => {
    const kinds = [...api, ...restarting];
    const schedule = faultSchedule(kinds, 56, 5, seededRandom(1));
    assert.equal(schedule.length, 56);
    for (const k of kinds) assert.equal(schedule.filter((s) => s === k).length, 5, `${k.name} five times`);
    const lastRestart = schedule.findLastIndex((s) => s?.restarts);
    assert.ok(lastRestart < Math.ceil(56 / 3), `last process restart at slot ${lastRestart} of 56`);
    assert.ok(
      schedule.slice(lastRestart + 1).every((s) => !s?.restarts),
      'no restart after the first third',
    );
  });

  it('gives the restarts as many early slots as they need, and leaves spare slots empty', () => {
    const kinds = [kind('apiserver-restart'), ...restarting, kind('emulator-restart', 'pubsub-emulator')];
    const schedule = faultSchedule(kinds, 55, 5, seededRandom(2));
    for (const k of kinds) assert.equal(schedule.filter((s) => s === k).length, 5);
    assert.equal(schedule.filter((s) => s === undefined).length, 55 - 20);
    assert.ok(schedule.findLastIndex((s) => s?.restarts) < Math.ceil(55 / 3));
  });

  it('a short run (the smoke) runs rounds of every kind, slot by slot', () => {
    const kinds = [...api, ...restarting];
    const schedule = faultSchedule(kinds, 9, 5, seededRandom(3));
    assert.equal(new Set(schedule.slice(0, kinds.length)).size, Math.min(9, kinds.length));
    assert.ok(schedule.every(Boolean));
  });
});

describe('the soak: memory slopes per life', () => {
  it('fits each pid apart after its warm-up; a restart is not a step in the slope', () => {
    const samples: MemorySample[] = [];
    const t0 = 1_000_000;
    // Life 1: 100 MiB flat for 5 min; life 2 (a restart) starts at 50 MiB, flat for 20 min.
    for (let t = 0; t < 5 * 60_000; t += 10_000)
      samples.push({ at: t0 + t, pid: 1, rssMiB: 100, heapMiB: 40 });
    for (let t = 5 * 60_000; t < 25 * 60_000; t += 10_000)
      samples.push({ at: t0 + t, pid: 2, rssMiB: 50, heapMiB: 20 + (t - 5 * 60_000) / 3_600_000 });
    const slope = slopeOf(samples, t0);
    assert.ok(slope);
    assert.equal(slope.pid, 2, 'the longest life');
    assert.equal(slope.segments, 2);
    assert.equal(slope.lives.length, 2);
    assert.ok(Math.abs(slope.rssMiBPerHour as number) < 1e-9, `flat: ${slope.rssMiBPerHour}`);
    assert.ok(Math.abs((slope.heapMiBPerHour as number) - 1) < 1e-6, `1 MiB/h: ${slope.heapMiBPerHour}`);
    assert.equal(slope.fromMs, t0 + 5 * 60_000 + LIFE_WARMUP_MS, "the life's warm-up left out");
    assert.deepEqual(slope.rssMiB, [50, 50]);
  });

  it("gives each life's threads at its first and last sample after its warm-up, as /proc reads them", () => {
    const samples: MemorySample[] = [];
    const t0 = 1_000_000;
    // The Pub/Sub emulator's threads grow with the ordering keys it has seen (decision 68).
    for (let t = 0; t <= 10 * 60_000; t += 10_000)
      samples.push({ at: t0 + t, pid: 3, rssMiB: 150, threads: 40 + t / 10_000 });
    assert.deepEqual(slopeOf(samples, t0)?.threads, [40 + LIFE_WARMUP_MS / 10_000, 100]);
    const own = procStatus(process.pid);
    assert.ok(own && own.rssMiB > 0 && (own.threads ?? 0) >= 1, JSON.stringify(own));
    assert.equal(procStatus(2 ** 22 + 1), undefined, 'no such pid');
  });
});

describe("the soak: the heap's floor", () => {
  it('fits the least heap of each window: a flat floor under a sawtooth is flat', () => {
    const samples: MemorySample[] = [];
    const t0 = 5_000_000;
    // 20 minutes: a sawtooth from 60 to 90 MiB every 100 s, on a flat floor of 60 MiB.
    for (let t = 0; t < 20 * 60_000; t += 10_000)
      samples.push({ at: t0 + t, pid: 7, rssMiB: 200, heapMiB: 60 + ((t % 100_000) / 100_000) * 30 });
    // The sampled sawtooth's own fit depends on where the samples fall; the floor's does not.
    const slope = slopeOf(samples, t0);
    assert.ok(slope);
    assert.ok(Math.abs(slope.heapFloorMiBPerHour as number) < 1e-9, `floor ${slope.heapFloorMiBPerHour}`);
  });

  it('a floor that rises 10 MiB/h is fitted at 10 MiB/h', () => {
    const points: [number, number][] = [];
    for (let m = 0; m < 30; m += 1 / 6) points.push([m / 60, 50 + (m / 60) * 10 + ((m * 6) % 5) * 4]);
    const floor = floorOf(points);
    assert.equal(floor.length, 10, 'one point per 3-minute window');
    const fitted = (floor.at(-1)?.[1] ?? 0) - (floor[0]?.[1] ?? 0);
    assert.ok(Math.abs(fitted - 10 * (27 / 60)) < 0.5, `rose ${fitted} MiB over 27 min`);
  });
});
