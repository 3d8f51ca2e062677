// A tiny development server (node http, no dependencies): serves the built explorer from
// ../src/server/explore/assets/ and fixture answers for the API under /api/v0/..., so the page
// can be tried in a browser without `scraper run`.
//
//   node dev/server.mjs [--port 12399]     then open http://127.0.0.1:12399/explore
//
// Query-driven scenarios: service_name="broken" answers 500, service_name="none" has no data,
// FLAME_FIXTURE=path.json serves that file as every flame graph (the render benchmark), and
// DIFF_HTML=path.html serves that file as the diff report (e.g. one `scraper diff --html` wrote).

import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { flameGraphResponse } from '../e2e/fixture.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const assets = process.env.ASSETS_DIR || join(here, '../../src/server/explore/assets');
const portFlag = process.argv.indexOf('--port');
const port = portFlag > 0 ? Number(process.argv[portFlag + 1]) : Number(process.env.PORT ?? 12399);

const TYPES = [
  ['process_cpu', 'cpu', 'nanoseconds', 'cpu', 'nanoseconds'],
  ['memory', 'alloc_space', 'bytes', 'space', 'bytes'],
  ['memory', 'inuse_space', 'bytes', 'space', 'bytes'],
  ['goroutine', 'goroutine', 'count', 'goroutine', 'count'],
].map(([name, st, su, pt, pu]) => ({ id: `${name}:${st}:${su}:${pt}:${pu}`, name, sample_type: st, sample_unit: su, period_type: pt, period_unit: pu }));

const SERVICES = [
  ['checkout', ['eu-west-1', 'us-east-1']],
  ['cart', ['eu-west-1']],
  ['scraper', ['eu-west-1']],
];

const now = Date.now();
const MARKS = [
  { name: 'deploy v1.4.2', at: now - 20 * 60e3 },
  { name: 'upgrade', at: now - 45 * 60e3 },
];

let fixture = null;
if (process.env.FLAME_FIXTURE) fixture = readFileSync(process.env.FLAME_FIXTURE, 'utf8');
const small = JSON.stringify(flameGraphResponse({ samples: 5000, maxNodes: 8192, seconds: 900 }));

function send(res, status, type, body, headers = {}) {
  res.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers });
  res.end(body);
}
const json = (res, status, v) => send(res, status, 'application/json', JSON.stringify(v));

function scenario(q) {
  const query = q.get('query') || '';
  if (query.includes('"broken"')) return 'broken';
  if (query.includes('"none"')) return 'none';
  return 'ok';
}

function need(q, res, ...names) {
  for (const n of names) {
    if (!q.get(n) || (n !== 'type' && n !== 'query' && !Number.isFinite(Number(q.get(n))))) {
      json(res, 400, { error: `missing or bad parameter ${n}` });
      return false;
    }
  }
  return true;
}

function catalog(q, res) {
  const series = [];
  for (const [svc, regions] of SERVICES) {
    for (const region of regions) {
      for (const t of TYPES) {
        series.push({ labels: { __name__: t.name, service_name: svc, region, namespace: 'shop', pod: `${svc}-7d9f-${region.slice(0, 2)}` }, profile_types: [t.id] });
      }
    }
  }
  json(res, 200, { stores: ['pyroscope.store.local'], profile_types: TYPES, series });
}

function timeline(q, res) {
  if (!need(q, res, 'type', 'from', 'to', 'step')) return;
  const from = Number(q.get('from'));
  const to = Number(q.get('to'));
  const step = Number(q.get('step'));
  const snapshot = /inuse|goroutine/.test(q.get('type'));
  const points = [];
  if (scenario(q) === 'none') return json(res, 200, { unit: 'nanoseconds', measure: 'per_second', step, points, marks: [] });
  if (scenario(q) === 'broken') return json(res, 500, { error: 'store pyroscope.store.local: reading block 01J0ABC: checksum mismatch' });
  for (let t = Math.ceil(from / 1000 / step) * step * 1000; t <= to; t += step * 1000) {
    // A gap of ten minutes an hour ago shows how missing data looks.
    if (t > now - 70 * 60e3 && t < now - 60 * 60e3) continue;
    const base = snapshot ? 48e6 : 0.35e9;
    const bump = t > now - 20 * 60e3 ? 1.4 : 1;
    points.push([t, base * bump * (1 + 0.25 * Math.sin(t / 600e3) + 0.05 * Math.sin(t / 37e3))]);
  }
  const unit = /cpu/.test(q.get('type')) ? 'nanoseconds' : /goroutine/.test(q.get('type')) ? 'count' : 'bytes';
  json(res, 200, { unit, measure: snapshot ? 'average' : 'per_second', step, points, marks: MARKS.filter((m) => m.at >= from && m.at <= to) });
}

function flamegraph(q, res) {
  if (!need(q, res, 'type', 'from', 'to')) return;
  if (scenario(q) === 'broken') return json(res, 500, { error: 'store pyroscope.store.local: reading block 01J0ABC: checksum mismatch' });
  if (scenario(q) === 'none') return json(res, 200, { names: [], levels: [], total: 0, max_self: 0, unit: 'nanoseconds', measure: 'per_second', seconds: 0, profiles: 0, series: 0 });
  // One synthetic graph for every type, in the type's unit and measure.
  const type = q.get('type');
  const fg = JSON.parse(fixture || small);
  if (/space|bytes/.test(type)) Object.assign(fg, { unit: 'bytes' });
  if (/goroutine|objects/.test(type)) Object.assign(fg, { unit: 'count' });
  if (/inuse|goroutine/.test(type)) Object.assign(fg, { measure: 'average' });
  send(res, 200, 'application/json', JSON.stringify(fg));
}

function diff(q, res) {
  if (!need(q, res, 'type', 'before_from', 'before_to', 'after_from', 'after_to')) return;
  if (scenario(q) === 'none') return json(res, 400, { error: 'the before window has no profiles' });
  if (process.env.DIFF_HTML) return send(res, 200, 'text/html; charset=utf-8', readFileSync(process.env.DIFF_HTML));
  const span = (a, b) => `${new Date(Number(q.get(a))).toISOString()} .. ${new Date(Number(q.get(b))).toISOString()}`;
  send(res, 200, 'text/html; charset=utf-8', `<!DOCTYPE html><html><body style="font:13px system-ui;margin:16px"><h1 style="font-size:17px">Diff report (dev fixture)</h1><p>before: ${span('before_from', 'before_to')}</p><p>after: ${span('after_from', 'after_to')}</p><p><code>scraper run</code> serves the real <code>scraper diff --html</code> report here.</p></body></html>`);
}

function download(res, name) {
  send(res, 200, 'application/octet-stream', Buffer.from([0x1f, 0x8b]), { 'content-disposition': `attachment; filename="${name}"` });
}

const ASSET_TYPES = { 'explore.js': 'text/javascript; charset=utf-8', 'explore.css': 'text/css; charset=utf-8' };

const server = createServer((req, res) => {
  const url = new URL(req.url, 'http://localhost');
  const q = url.searchParams;
  try {
    switch (url.pathname) {
      case '/explore':
        return send(res, 200, 'text/html; charset=utf-8', readFileSync(join(assets, 'explore.html')));
      case '/explore/assets/explore.js':
      case '/explore/assets/explore.css': {
        const f = url.pathname.split('/').pop();
        return send(res, 200, ASSET_TYPES[f], readFileSync(join(assets, f)));
      }
      case '/api/v0/explore/catalog':
        return catalog(q, res);
      case '/api/v0/explore/timeline':
        return timeline(q, res);
      case '/api/v0/explore/flamegraph':
        return flamegraph(q, res);
      case '/api/v0/explore/diff':
        return diff(q, res);
      case '/api/v0/explore/pprof':
        return download(res, 'profile.pb.gz');
      case '/api/v0/explore/pgo':
        return download(res, 'default.pgo');
      case '/api/v0/marks':
        return json(res, 200, { marks: MARKS });
      default:
        return json(res, 404, { error: `no route ${url.pathname}` });
    }
  } catch (e) {
    json(res, 500, { error: String(e && e.message) });
  }
});

// --port 0 picks a free port; the first line printed names it (e2e/render-bench.mjs reads it).
server.listen(port, '127.0.0.1', () => console.log(`explorer dev server: http://127.0.0.1:${server.address().port}/explore`));
