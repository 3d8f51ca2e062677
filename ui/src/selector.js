// Label selectors such as {service_name="app", region=~"eu.*"}: parsed just enough for the
// service picker and the label browser to add or replace one matcher in the query box.

// Read exactly as the server's parser (src/query/selector.rs) reads it, so that a value
// survives a round trip through the query box unchanged.
const MATCHER_HEAD = /^\s*([A-Za-z_.][A-Za-z0-9_.]*)\s*(=~|!~|!=|=)\s*/;

// The escapes the server accepts inside "..." and '...'; any other is an error there.
const UNESCAPE = { n: '\n', t: '\t', r: '\r', '\\': '\\', '"': '"', "'": "'" };

/** The quoted string at the start of `s` as [value, length read], or null. */
function readString(s) {
  const q = s[0];
  if (q !== '"' && q !== "'" && q !== '`') return null;
  let out = '';
  for (let i = 1; i < s.length; i++) {
    const c = s[i];
    if (c === q) return [out, i + 1];
    if (c === '\\' && q !== '`') {
      // Backquoted strings are raw, as in Go and Prometheus.
      const e = s[i + 1];
      if (!(e in UNESCAPE)) return null;
      out += UNESCAPE[e];
      i++;
      continue;
    }
    out += c;
  }
  return null;
}

/** The matchers of `s` as [{name, op, value}], or null when `s` is not a selector this reads. */
export function parseSelector(s) {
  let rest = (s || '').trim();
  if (rest === '') return [];
  if (!rest.startsWith('{') || !rest.endsWith('}')) return null;
  rest = rest.slice(1, -1);
  const out = [];
  while (rest.trim() !== '') {
    const m = MATCHER_HEAD.exec(rest);
    if (!m) return null;
    const str = readString(rest.slice(m[0].length));
    if (!str) return null;
    out.push({ name: m[1], op: m[2], value: str[0] });
    rest = rest.slice(m[0].length + str[1]).trimStart();
    if (rest.startsWith(',')) rest = rest.slice(1);
    else if (rest.trim() !== '') return null;
  }
  return out;
}

const ESCAPE = { '\\': '\\\\', '"': '\\"', '\n': '\\n', '\t': '\\t', '\r': '\\r' };

/** `v` double-quoted with the escapes the server reads back to `v`. */
function quote(v) {
  return '"' + v.replace(/[\\"\n\t\r]/g, (c) => ESCAPE[c]) + '"';
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
