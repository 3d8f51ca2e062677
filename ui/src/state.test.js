// node --test: the URL state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readState, timelineWindow, selectedRange, stepFor } from './state.js';

test('reads the URL, with defaults', () => {
  assert.deepEqual(readState(''), { query: '{}', range: '1h' });
  assert.deepEqual(readState('?type=process_cpu&range=6h&sel_from=5&sel_to=9&fn=main.f'), {
    type: 'process_cpu',
    range: '6h',
    sel_from: 5,
    sel_to: 9,
    fn: 'main.f',
    query: '{}',
  });
  // An absolute window wins over a preset; a backwards one is dropped.
  assert.deepEqual(readState('?from=100&to=200&range=6h'), { from: 100, to: 200, query: '{}' });
  assert.deepEqual(readState('?from=200&to=100&range=nope'), { query: '{}', range: '1h' });
  assert.deepEqual(readState('?before_from=x&query=%7Ba%3D%22b%22%7D'), { query: '{a="b"}', range: '1h' });
});

test('windows, selections and steps', () => {
  assert.deepEqual(timelineWindow({ range: '15m' }, 1_000_000), [100_000, 1_000_000]);
  assert.deepEqual(timelineWindow({ from: 1, to: 2, range: '15m' }, 1_000_000), [1, 2]);
  assert.deepEqual(selectedRange({ sel_from: 3, sel_to: 4 }, [1, 9]), [3, 4]);
  assert.deepEqual(selectedRange({}, [1, 9]), [1, 9]);
  const cases = [
    [15 * 60e3, 15],
    [3600e3, 15],
    [6 * 3600e3, 120],
    [24 * 3600e3, 300],
    [7 * 86400e3, 3600],
  ];
  for (const [span, want] of cases) assert.equal(stepFor(0, span), want, `${span}`);
});
