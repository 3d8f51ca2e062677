// node --test: the table's per-function values and the sandwich view.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fromLevels, fromNested } from './tree.js';
import { topFunctions, sandwich } from './functions.js';
import { SIMPLE } from './testdata.js';

const simple = () => fromLevels(SIMPLE.names, SIMPLE.levels);

test('self and total per function, widest self first', () => {
  assert.deepEqual(topFunctions(simple()), [
    { name: 'main.work', self: 985, total: 985 },
    { name: 'main.main', self: 2, total: 3 },
    { name: 'main.fastFunction', self: 1, total: 215 },
    { name: 'runtime.main', self: 0, total: 988 },
    { name: 'main.slowFunction', self: 0, total: 771 },
  ]);
});

// total → main → f → g → f → h: the inner f is inside the outer one's total.
function recursive() {
  const n = (name, total, self, kids = []) => ({ name, total, self, children: new Map(kids.map((k) => [k.name, k])) });
  return fromNested(n('total', 10, 0, [n('main', 10, 2, [n('f', 8, 1, [n('g', 7, 2, [n('f', 5, 1, [n('h', 4, 4)])])])])]));
}

test('recursion is counted once in totals, every time in self', () => {
  const rows = Object.fromEntries(topFunctions(recursive()).map((r) => [r.name, [r.self, r.total]]));
  assert.deepEqual(rows, { main: [2, 10], f: [2, 8], g: [2, 7], h: [4, 4] });
});

const flat = (node, prefix = '') => {
  const out = [`${prefix}${node.name} ${node.total}/${node.self}`];
  for (const c of [...node.children.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) out.push(...flat(c, prefix + '  '));
  return out;
};

test('sandwich merges callers and callees over every call site', () => {
  const s = sandwich(simple(), 'main.fastFunction');
  assert.equal(s.total, 215);
  assert.equal(s.self, 1);
  assert.deepEqual(flat(s.callers), [
    'main.fastFunction 215/0',
    '  main.main 1/0',
    '    runtime.main 1/0',
    '      total 1/1',
    '  runtime.main 214/0',
    '    total 214/214',
  ]);
  assert.deepEqual(flat(s.callees), ['main.fastFunction 215/1', '  main.work 214/214']);
});

test('sandwich of a recursive function starts at its outermost frames', () => {
  const s = sandwich(recursive(), 'f');
  assert.equal(s.total, 8);
  assert.equal(s.self, 2);
  assert.deepEqual(flat(s.callees), ['f 8/1', '  g 7/2', '    f 5/1', '      h 4/4']);
  assert.deepEqual(flat(s.callers), ['f 8/0', '  main 8/0', '    total 8/8']);
});

test('sandwich of an unknown function is null', () => {
  assert.equal(sandwich(simple(), 'main.nothing'), null);
});
