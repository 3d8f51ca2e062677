// node --test: decoding Pyroscope's FlameGraph levels.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromLevels, fromNested, widest, emptyTree } from './tree.js';
import { SIMPLE } from './testdata.js';

const rows = (t) =>
  Array.from({ length: t.n }, (_, i) => [t.names[t.name[i]], t.depth[i], t.x[i], t.total[i], t.self[i], t.parent[i] < 0 ? null : t.names[t.name[t.parent[i]]]]);

test('decodes positions, values and parents', () => {
  const t = fromLevels(SIMPLE.names, SIMPLE.levels);
  assert.deepEqual(rows(t), [
    ['total', 0, 0, 988, 0, null],
    ['runtime.main', 1, 0, 988, 0, 'total'],
    ['main.fastFunction', 2, 0, 214, 0, 'runtime.main'],
    ['main.main', 2, 214, 3, 2, 'runtime.main'],
    ['main.slowFunction', 2, 217, 771, 0, 'runtime.main'],
    ['main.work', 3, 0, 214, 214, 'main.fastFunction'],
    ['main.fastFunction', 3, 216, 1, 1, 'main.main'],
    ['main.work', 3, 217, 771, 771, 'main.slowFunction'],
  ]);
  // Children as index ranges.
  assert.deepEqual([t.childStart[1], t.childEnd[1]], [2, 5]);
  assert.deepEqual([t.childStart[3], t.childEnd[3]], [6, 7]);
  assert.equal(t.childEnd[5], 0);
  assert.deepEqual(Array.from(t.levelStart), [0, 1, 2, 5, 8]);
});

test('broken encodings are errors, not pictures', () => {
  const cases = [
    [['total'], [[0, 10, 0]], /4 integers/],
    [['total'], [[0, 10, 0, 3]], /outside names/],
    [['total', 'a'], [[0, 10, 0, 0], [5, 10, 0, 1]], /outside every node/],
    [['total', 'a'], 'nope', /arrays/],
  ];
  for (const [names, levels, err] of cases) assert.throws(() => fromLevels(names, levels), err);
});

test('an empty answer is an empty tree', () => {
  assert.equal(fromLevels([], []).n, 0);
  assert.equal(emptyTree().n, 0);
  assert.deepEqual(widest(emptyTree(), 3), []);
});

test('widest frames below the root', () => {
  const t = fromLevels(SIMPLE.names, SIMPLE.levels);
  assert.deepEqual(widest(t, 3), [
    { name: 'runtime.main', total: 988 },
    { name: 'main.slowFunction', total: 771 },
    { name: 'main.work', total: 771 },
  ]);
});

test('nested trees lay out like levels, children by name', () => {
  const n = (name, total, self, kids = []) => ({ name, total, self, children: new Map(kids.map((k) => [k.name, k])) });
  const t = fromNested(n('f', 10, 1, [n('z', 6, 6), n('a', 3, 0, [n('b', 3, 3)])]));
  assert.deepEqual(rows(t), [
    ['f', 0, 0, 10, 1, null],
    ['a', 1, 0, 3, 0, 'f'],
    ['z', 1, 3, 6, 6, 'f'],
    ['b', 2, 0, 3, 3, 'a'],
  ]);
});
