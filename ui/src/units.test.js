// node --test: formatting agrees with src/diff/units.rs (these are its test's cases).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatValue, formatMeasured, formatShare, formatSpan } from './units.js';

test('values like src/diff/units.rs', () => {
  const cases = [
    [0, 'nanoseconds', '0s'],
    [12_300_000, 'nanoseconds', '12.3ms'],
    [999, 'nanoseconds', '999ns'],
    [999.7, 'nanoseconds', '1.00\u00b5s'],
    [1.5e9, 'nanoseconds', '1.50s'],
    [2500, 'microseconds', '2.50ms'],
    [512, 'bytes', '512B'],
    [1.2 * 1024 * 1024, 'bytes', '1.20MiB'],
    [3 * 1024 * 1024 * 1024, 'bytes', '3.00GiB'],
    [1234, 'count', '1.23k'],
    [0.0123, 'count', '0.0123'],
    [42, 'goroutines', '42.0 goroutines'],
    [-2048, 'bytes', '-2.00KiB'],
  ];
  for (const [v, unit, want] of cases) assert.equal(formatValue(v, unit), want, `${v} ${unit}`);
});

test('measures, shares and spans', () => {
  assert.equal(formatMeasured(12_300_000, 'nanoseconds', 'per_second'), '12.3ms/s');
  assert.equal(formatMeasured(1.2 * 1024 * 1024, 'bytes', 'average'), '1.20MiB');
  assert.equal(formatMeasured(0, 'bytes', 'per_second'), '0');
  assert.equal(formatShare(1, 4), '25.0%');
  assert.equal(formatShare(1, 1000), '0.10%');
  assert.equal(formatShare(1, 0), '');
  assert.equal(formatSpan(15 * 60e3), '15m');
  assert.equal(formatSpan(90 * 60e3), '1h30m');
  assert.equal(formatSpan(7 * 86400e3), '7d');
  assert.equal(formatSpan(42e3), '42s');
});
