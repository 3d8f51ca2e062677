// Label selectors such as {service_name="app", region=~"eu.*"}: parsed just enough for the
// service picker and the label browser to add or replace one matcher in the query box.

const MATCHER = /^\s*([A-Za-z_][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*/;

/** The matchers of `s` as [{name, op, value}], or null when `s` is not a selector this reads. */
export function parseSelector(s) {
  let rest = (s || '').trim();
  if (rest === '') return [];
  if (!rest.startsWith('{') || !rest.endsWith('}')) return null;
  rest = rest.slice(1, -1);
  const out = [];
  while (rest.trim() !== '') {
    const m = MATCHER.exec(rest);
    if (!m) return null;
    out.push({ name: m[1], op: m[2], value: m[3].replace(/\\(.)/g, '$1') });
    rest = rest.slice(m[0].length);
    if (rest.startsWith(',')) rest = rest.slice(1);
    else if (rest.trim() !== '') return null;
  }
  return out;
}

function quote(v) {
  return '"' + v.replace(/\\/g, '\\\\').replace(/"/g, '\\"') + '"';
}

export function formatSelector(matchers) {
  return '{' + matchers.map((m) => `${m.name}${m.op}${quote(m.value)}`).join(', ') + '}';
}

/**
 * `s` with label `name` matched by equality to `value` (replacing matchers of that label), or
 * without any matcher of it when `value` is ''. Returns null when `s` cannot be parsed.
 */
export function withLabel(s, name, value) {
  const ms = parseSelector(s);
  if (ms === null) return null;
  const kept = ms.filter((m) => m.name !== name);
  if (value !== '') kept.push({ name, op: '=', value });
  return formatSelector(kept);
}

/** The value `name` is matched by equality to in `s`, or ''. */
export function equalityValue(s, name) {
  const ms = parseSelector(s) || [];
  const m = ms.find((x) => x.name === name && x.op === '=');
  return m ? m.value : '';
}
