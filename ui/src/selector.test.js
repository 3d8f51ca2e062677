// node --test: the selector editing behind the service picker and the label browser.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseSelector, withLabel, equalityValue } from './selector.js';

test('parses the matchers it can edit', () => {
  assert.deepEqual(parseSelector('{}'), []);
  assert.deepEqual(parseSelector(''), []);
  assert.deepEqual(parseSelector('{service_name="app", region=~"eu.*",pod!="x\\"y"}'), [
    { name: 'service_name', op: '=', value: 'app' },
    { name: 'region', op: '=~', value: 'eu.*' },
    { name: 'pod', op: '!=', value: 'x"y' },
  ]);
  for (const bad of ['service_name="app"', '{a=b}', '{a="b" c="d"}', '{a="b"']) assert.equal(parseSelector(bad), null, bad);
});

test('adds, replaces and removes one label', () => {
  const cases = [
    ['{}', 'service_name', 'app', '{service_name="app"}'],
    ['{service_name="a", region="eu"}', 'service_name', 'b', '{region="eu", service_name="b"}'],
    ['{service_name="a", region="eu"}', 'service_name', '', '{region="eu"}'],
    ['{}', 'pod', 'we"ird', '{pod="we\\"ird"}'],
    ['not a selector', 'pod', 'x', null],
  ];
  for (const [q, name, value, want] of cases) assert.equal(withLabel(q, name, value), want, `${q} ${name}=${value}`);
  assert.equal(equalityValue('{service_name="app", region=~"eu"}', 'service_name'), 'app');
  assert.equal(equalityValue('{service_name="app", region=~"eu"}', 'region'), '');
});

test('values round-trip with the escapes the server reads', () => {
  // Each value as the server's parser (src/query/selector.rs) reads it from the written form.
  const cases = [
    ['line\nbreak', '{v="line\\nbreak"}'],
    ['tab\there', '{v="tab\\there"}'],
    ['back\\slash', '{v="back\\\\slash"}'],
    ['cr\rx', '{v="cr\\rx"}'],
    ['q"uote', '{v="q\\"uote"}'],
    ["it's", '{v="it\'s"}'],
    ['\\n literally', '{v="\\\\n literally"}'],
  ];
  for (const [value, written] of cases) {
    assert.equal(withLabel('{}', 'v', value), written, JSON.stringify(value));
    assert.equal(equalityValue(written, 'v'), value, written);
  }
});

test('reads strings as the server does', () => {
  const cases = [
    ['{a="x\\ny"}', 'x\ny'],
    ['{a="x\\ty"}', 'x\ty'],
    ["{a='x\\'y'}", "x'y"],
    ['{a=`raw\\n`}', 'raw\\n'],
    ['{a="x,y}"}', 'x,y}'],
  ];
  for (const [q, want] of cases) assert.deepEqual(parseSelector(q), [{ name: 'a', op: '=', value: want }], q);
  // The server refuses unknown escapes and unterminated strings: not a selector here either.
  for (const bad of ['{a="\\q"}', '{a="x}', '{a=`x}']) assert.equal(parseSelector(bad), null, bad);
});
