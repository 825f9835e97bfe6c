// The local API server's decoding of metav1.Time / metav1.MicroTime (apiserver/times.ts):
// Go's time.Parse acceptance rules and *time.ParseError wording, and the normalised wire format.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { formatMicroTime, formatTime, parseGoTime, RFC3339, RFC3339_MICRO } from '../times.ts';

const asTime = (v: string) => formatTime(parseGoTime(v, RFC3339));
const asMicro = (v: string) => formatMicroTime(parseGoTime(v, RFC3339_MICRO));
const error = (v: string, layout: typeof RFC3339 | typeof RFC3339_MICRO) => {
  try {
    parseGoTime(v, layout);
  } catch (err) {
    return (err as Error).message;
  }
  assert.fail(`${v} parsed`);
};

describe('metav1.Time (time.RFC3339)', () => {
  test('accepts a fraction after the seconds (Go: "even if the layout does not signify its presence")', () => {
    assert.equal(asTime('2026-11-23T08:53:12.183Z'), '2026-11-23T08:53:12Z');
    assert.equal(
      asTime('2026-11-23T08:53:12,999999999999Z'),
      '2026-11-23T08:53:12Z',
      'comma; digits beyond 9',
    );
    assert.equal(asTime('2026-11-23T8:53:12Z'), '2026-11-23T08:53:12Z', 'a one-digit hour');
    assert.equal(asTime('2026-11-23T00:30:00+01:00'), '2026-11-22T23:30:00Z', 'to UTC');
    assert.equal(asTime('2024-02-29T00:00:00Z'), '2024-02-29T00:00:00Z');
  });

  test('rejects with Go’s messages', () => {
    assert.equal(
      error('2026-11-23T08:53:12', RFC3339),
      'parsing time "2026-11-23T08:53:12" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "Z07:00"',
    );
    assert.equal(
      error('', RFC3339),
      'parsing time "" as "2006-01-02T15:04:05Z07:00": cannot parse "" as "2006"',
    );
    assert.equal(
      error('2026-13-01T00:00:00Z', RFC3339),
      'parsing time "2026-13-01T00:00:00Z": month out of range',
    );
    assert.equal(
      error('2025-02-29T00:00:00Z', RFC3339),
      'parsing time "2025-02-29T00:00:00Z": day out of range',
    );
    assert.equal(
      error('2026-11-23T08:53:12Zz', RFC3339),
      'parsing time "2026-11-23T08:53:12Zz": extra text: "z"',
    );
    assert.equal(
      error('2026-11-23T08:5:12Z', RFC3339),
      'parsing time "2026-11-23T08:5:12Z" as "2006-01-02T15:04:05Z07:00": cannot parse "5:12Z" as "04"',
    );
    assert.match(error('2026-11-23T08:53:12Z\u00e9', RFC3339), /extra text: "\\xc3\\xa9"$/);
  });
});

describe('metav1.MicroTime (RFC3339Micro)', () => {
  test('exactly six fractional digits', () => {
    assert.equal(asMicro('2026-11-23T08:53:12.183456Z'), '2026-11-23T08:53:12.183456Z');
    assert.equal(asMicro('2026-11-23T10:53:12.000001+02:00'), '2026-11-23T08:53:12.000001Z');
    assert.equal(
      error('2026-11-23T08:53:12.183Z', RFC3339_MICRO),
      'parsing time "2026-11-23T08:53:12.183Z" as "2006-01-02T15:04:05.000000Z07:00": cannot parse ".183Z" as ".000000"',
    );
    assert.match(error('2026-11-23T08:53:12.1834567Z', RFC3339_MICRO), /cannot parse "7Z" as "Z07:00"$/);
  });
});
