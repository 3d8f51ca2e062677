// The pickers fed by the catalog: profile type, service, and the label browser that adds
// label="value" matchers to the query.

import { withLabel, equalityValue, parseSelector } from './selector.js';

const $ = (id) => document.getElementById(id);

function option(value, text) {
  const o = document.createElement('option');
  o.value = value;
  o.textContent = text;
  return o;
}

/** A readable name for a profile type: "process_cpu · cpu (nanoseconds)". */
export function typeLabel(t) {
  return `${t.name} \u00b7 ${t.sample_type} (${t.sample_unit})`;
}

/** The type to show when the URL names none (or one the catalog lacks): CPU if there is one. */
export function defaultType(catalog, wanted) {
  const types = catalog.profile_types || [];
  if (wanted && types.some((t) => t.id === wanted || t.name === wanted)) {
    const exact = types.find((t) => t.id === wanted);
    return exact ? exact.id : types.find((t) => t.name === wanted).id;
  }
  const cpu = types.find((t) => t.sample_type === 'cpu') || types.find((t) => /cpu/.test(t.id));
  return (cpu || types[0] || {}).id || '';
}

/** Fills the type and service pickers and the label browser from `catalog`. */
export function renderControls(catalog, state, onChange) {
  const types = catalog.profile_types || [];
  const typeSel = $('type');
  typeSel.textContent = '';
  for (const t of types) typeSel.appendChild(option(t.id, typeLabel(t)));
  if (types.length === 0) typeSel.appendChild(option('', 'no profiles in range'));
  typeSel.value = state.type || '';
  typeSel.onchange = () => onChange({ type: typeSel.value });

  const series = (catalog.series || []).filter((s) => !state.type || (s.profile_types || []).includes(state.type));
  const services = [...new Set(series.map((s) => (s.labels || {}).service_name).filter(Boolean))].sort();
  const serviceSel = $('service');
  serviceSel.textContent = '';
  serviceSel.appendChild(option('', services.length ? `All services (${services.length})` : 'All services'));
  for (const s of services) serviceSel.appendChild(option(s, s));
  const current = equalityValue(state.query, 'service_name');
  if (current && !services.includes(current)) serviceSel.appendChild(option(current, current + ' (no data)'));
  serviceSel.value = current;
  serviceSel.onchange = () => {
    const q = withLabel(state.query, 'service_name', serviceSel.value);
    if (q === null) {
      onChange({ error: 'The query is not a selector the service picker can edit; change it by hand.' });
      return;
    }
    onChange({ query: q });
  };

  renderLabels(series, state, onChange);
}

// Label names with their values, narrowed to the series the current query matches by equality.
function renderLabels(series, state, onChange) {
  const host = $('labels');
  host.textContent = '';
  const matchers = parseSelector(state.query) || [];
  const wanted = matchers.filter((m) => m.op === '=');
  const matching = series.filter((s) => wanted.every((m) => (s.labels || {})[m.name] === m.value));
  const values = new Map();
  for (const s of matching) {
    for (const [k, v] of Object.entries(s.labels || {})) {
      if (k === '__name__' || k.startsWith('__')) continue;
      if (!values.has(k)) values.set(k, new Set());
      values.get(k).add(v);
    }
  }
  const title = document.createElement('span');
  title.className = 'muted';
  title.textContent = values.size ? 'Labels' : 'No labels in range';
  host.appendChild(title);
  for (const name of [...values.keys()].sort()) {
    const chosen = equalityValue(state.query, name);
    const d = document.createElement('details');
    d.className = 'label' + (chosen ? ' chosen' : '');
    const sum = document.createElement('summary');
    sum.textContent = chosen ? `${name}="${chosen}"` : `${name} (${values.get(name).size})`;
    d.appendChild(sum);
    const list = document.createElement('div');
    list.className = 'values';
    const vals = [...values.get(name)].sort();
    if (chosen) vals.unshift('');
    for (const v of vals.slice(0, 200)) {
      const b = document.createElement('button');
      b.type = 'button';
      b.textContent = v === '' ? `any ${name}` : v;
      if (v === chosen) b.className = 'on';
      b.addEventListener('click', () => {
        const q = withLabel(state.query, name, v);
        if (q === null) onChange({ error: 'The query is not a selector the label browser can edit; change it by hand.' });
        else onChange({ query: q });
      });
      list.appendChild(b);
    }
    d.appendChild(list);
    // One list open at a time keeps the bar compact.
    d.addEventListener('toggle', () => {
      if (d.open) for (const o of host.querySelectorAll('details[open]')) if (o !== d) o.open = false;
    });
    host.appendChild(d);
  }
}
