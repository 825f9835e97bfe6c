/**
 * The soak's aggregates (soak/tally.ts, soak/workload.ts `Ledger`, soak/memory.ts `judgeSlope`,
 * soak/report.ts `counted`): a converged change is tallied and dropped, the latency figures come
 * from a bounded histogram, an at-resync change is given its cause, and a memory slope is judged
 * with its standard error.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { judgeSlope } from '../../soak/memory.ts';
import { counted } from '../../soak/report.ts';
import { LatencyTally, resyncCause } from '../../soak/tally.ts';
import { type Change, Ledger } from '../../soak/workload.ts';

describe('the soak: aggregates', () => {
  it('the ledger hands a converged change on and keeps only the pending ones', () => {
    const converged: Change[] = [];
    const ledger = new Ledger((c) => converged.push(c));
    ledger.record('secret.update', ['secret-replicator:soak-src/s-1']);
    ledger.record('foo.update', ['foo:soak-apps/foo-1'], true);
    ledger.record('namespace.create', []);
    assert.equal(ledger.total, 3);
    assert.equal(ledger.inBursts, 1);
    assert.deepEqual(ledger.byKind, { 'secret.update': 1, 'foo.update': 1, 'namespace.create': 1 });
    assert.equal(ledger.pending.size, 2);
    assert.deepEqual(
      converged.map((c) => c.kind),
      ['namespace.create'],
    );
    const [first] = ledger.pending;
    ledger.converged(first as Change, (first as Change).at + 1500);
    assert.equal(ledger.pending.size, 1);
    assert.equal(converged.at(-1)?.convergedAt, (first as Change).at + 1500);
  });

  it('latency figures from the histogram, to three significant digits', () => {
    const t = new LatencyTally();
    assert.deepEqual(t.figures(), { n: 0 });
    for (let ms = 1; ms <= 1000; ms++) t.record(ms * 10);
    const f = t.figures();
    assert.equal(f.n, 1000);
    assert.ok(Math.abs((f.p50 as number) - 5000) <= 10, `p50 ${f.p50}`);
    assert.ok(Math.abs((f.p99 as number) - 9900) <= 20, `p99 ${f.p99}`);
    assert.ok(Math.abs((f.max as number) - 10_000) <= 10, `max ${f.max}`);
    const cdf = t.cdfValues(100);
    assert.equal(cdf.length, 100);
    assert.ok(cdf.every((v, i) => i === 0 || v >= (cdf[i - 1] as number)));
  });

  it('an at-resync change gets its cause: dead-lettered, not in flight, or in flight', () => {
    const keys = ['secret-replicator:soak-src/s-1'];
    assert.equal(
      resyncCause({ keys, deadLetteredAtFirstAudit: 2 }, { 'secret-replicator': 3 }),
      'dead-lettered',
    );
    assert.equal(
      resyncCause(
        { keys, deadLetteredAtFirstAudit: 3, notInFlightAt: 1 },
        { 'secret-replicator': 3, foo: 9 },
      ),
      'not in flight',
    );
    assert.equal(resyncCause({ keys, deadLetteredAtFirstAudit: 0 }, {}), 'in flight');
  });

  it('a memory slope is judged with twice its standard error', () => {
    assert.equal(judgeSlope(1, 1), 'within');
    assert.equal(judgeSlope(20, 5), 'above');
    assert.equal(judgeSlope(3, 5), 'undecided');
    assert.equal(judgeSlope(undefined, undefined), 'undecided');
  });

  it('counts in words', () => {
    assert.equal(counted(1, 'step'), '1 step');
    assert.equal(counted(2, 'step'), '2 steps');
    assert.equal(counted(0, 'change'), '0 changes');
  });
});
