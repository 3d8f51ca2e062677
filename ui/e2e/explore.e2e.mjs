// The explorer, the diff view and the targets page of a real `scraper run`, driven in headless
// Chromium the way a person would use them, and checked against an oracle the Rust harness
// (tests/explore_browser.rs) computed from the store with the CLI. Exits 1 on the first check
// that does not hold, with what was expected and what the page showed.
//   SCRAPER_URL=http://127.0.0.1:PORT SCRAPER_E2E_EXPECT=expect.json \
//   SCRAPER_E2E_SCREENSHOTS=DIR [CHROMIUM=/usr/bin/chromium] node e2e/explore.e2e.mjs
// expect.json: {service, type, from, to (ms), total, top: [{name, cum}] (by cum, widest first),
// mark, grown: [fn], shrunk: [fn], down_target: {address, error_contains}}.
import { readFileSync, rmSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { launchOptions } from './browser.mjs';

const env = (name) => {
  const v = process.env[name];
  if (!v) {
    console.error(`FAIL ${name} is not set`);
    process.exit(1);
  }
  return v;
};
const base = env('SCRAPER_URL').replace(/\/$/, '');
const expect = JSON.parse(readFileSync(env('SCRAPER_E2E_EXPECT'), 'utf8'));
const shots = env('SCRAPER_E2E_SCREENSHOTS');
rmSync(`${shots}/failure.png`, { force: true });

class CheckFailed extends Error {}
const pass = (what) => console.log(`ok   ${what}`);
const check = (ok, what, detail = '') => {
  if (!ok) throw new CheckFailed(`${what}${detail ? `\n     ${detail}` : ''}`);
  pass(what);
};

const browser = await chromium.launch(launchOptions());
let page;
const errors = [];
try {
  page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on('pageerror', (e) => errors.push(String(e)));
  // Console errors name no URL; failed responses are recorded with theirs instead.
  page.on('console', (m) => m.type() === 'error' && !/^Failed to load resource/.test(m.text()) && errors.push(m.text()));
  // The server has no /favicon.ico; Chromium asks for one on pages that name no icon (the
  // targets page), which is the browser's doing, not the page's.
  page.on('response', (r) => r.status() >= 400 && !r.url().endsWith('/favicon.ico') && errors.push(`${r.status()} for ${r.url()}`));
  // Every action below starts a load synchronously (data-state becomes "loading" inside the
  // click handler), so waiting for it to leave "loading" waits for that action's answers.
  const settled = async (what) => {
    await page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 30000 }).catch(() => {
      throw new CheckFailed(`${what}: the page was still loading after 30 s`);
    });
    const s = await page.evaluate(() => ({
      state: document.body.dataset.state,
      banner: document.getElementById('banner').textContent,
      flame: document.getElementById('flame-msg').textContent,
      timeline: document.getElementById('timeline-msg').textContent,
      diff: document.getElementById('diff-msg').textContent,
    }));
    check(s.state === 'ready', `${what}: page is ready`, `data-state=${s.state}; messages: ${JSON.stringify(s)}`);
  };

  await explorer(page, settled);
  await diff(page, settled);
  await targets(page);
  check(errors.length === 0, 'no script errors or failed requests in the pages', errors.join(' | '));
} catch (e) {
  const known = e instanceof CheckFailed;
  console.log(`FAIL ${known ? e.message : e.stack || e}`);
  if (errors.length) console.log(`     page errors: ${errors.join(' | ')}`);
  if (page) await page.screenshot({ path: `${shots}/failure.png`, fullPage: true }).catch(() => {});
  await browser.close();
  process.exit(1);
}
await browser.close();
console.log('all checks passed');

// 1. The flame graph of the service over [from, to], compared with the oracle.
async function explorer(page, settled) {
  // The time window through the page's URL state (what a shared link carries); the type and
  // the service are then picked with the controls.
  await page.goto(`${base}/explore?from=${expect.from}&to=${expect.to}`);
  await settled('open the explorer');
  const windowText = await page.locator('#window').textContent();
  check(!(await page.locator('#presets button.on').count()), `the absolute window is shown: ${windowText}`);

  const types = await page.$$eval('#type option', (os) => os.map((o) => o.value));
  check(types.includes(expect.type), `the type picker offers ${expect.type}`, `options: ${types.join(', ')}`);
  await page.selectOption('#type', expect.type);
  await settled('pick the CPU type');

  // The service from the label browser: open the service_name list, click the value.
  const label = page.locator('#labels details', { has: page.locator('summary', { hasText: /^service_name/ }) });
  check((await label.count()) === 1, 'the label browser lists service_name');
  await label.locator('summary').click();
  const value = label.locator('.values button', { hasText: new RegExp(`^${expect.service}$`) });
  check(await value.isVisible(), `the service_name list shows ${expect.service}`, await label.locator('.values').textContent());
  const answer = page.waitForResponse((r) => r.url().includes('/api/v0/explore/flamegraph') && decodeURIComponent(r.url()).includes(expect.service), { timeout: 30000 });
  await value.click();
  await settled(`pick service ${expect.service}`);
  const query = await page.evaluate(() => window.explorer.state.query);
  check(query === `{service_name="${expect.service}"}`, `the query is ${query}`);
  check((await page.locator('#service').inputValue()) === expect.service, 'the service picker agrees');
  const resp = await (await answer).json();
  const url = new URL((await answer).url());
  check(
    Number(url.searchParams.get('from')) === expect.from && Number(url.searchParams.get('to')) === expect.to && url.searchParams.get('type') === expect.type,
    `the flame graph asks for ${expect.type} over [${expect.from}, ${expect.to}]`,
    url.search,
  );
  const frames = Number(await page.evaluate(() => document.body.dataset.frames));
  check(frames > 3, `the flame graph drew ${frames} frames`);

  // The page normalises only what it prints (per second over `seconds`); the API's answer and
  // window.explorer.widest() carry raw values, which is what the CLI's profile holds.
  check(resp.total === expect.total, `the API's raw total ${resp.total} is the oracle's total`, `oracle ${expect.total}`);
  if (resp.measure === 'per_second') {
    // Per second of the time the profiles cover, as `scraper diff` divides (not the window).
    check(Math.abs(resp.seconds - expect.seconds) < 1e-6, `the page shows per second over the ${resp.seconds} s the profiles cover`, `oracle ${expect.seconds}`);
  }

  // The widest frames below the root against the oracle's functions by cum. A frame is one call
  // path while cum sums a function over all its paths, so the top functions that are each a
  // single frame must be the widest frames with the same values, in the same order.
  const widest = await page.evaluate((n) => window.explorer.widest(n), 12);
  const oracle = expect.top;
  const cum = new Map(oracle.map((t) => [t.name, t.cum]));
  const frameCounts = await page.evaluate(() => {
    const n = new Map();
    for (const w of window.explorer.widest(1e6)) n.set(w.name, (n.get(w.name) || 0) + 1);
    return Object.fromEntries(n);
  });
  const single = oracle.filter((t) => frameCounts[t.name] === 1).slice(0, 4);
  const shown = widest.filter((w) => frameCounts[w.name] === 1).slice(0, single.length);
  const fmt = (xs, key) => xs.map((x) => `${x.name}=${x[key]}`).join(', ');
  check(single.length >= 3, `the oracle's top functions include ${single.length} single-frame ones`, fmt(oracle, 'cum'));
  // Equal values may come in either order.
  const rank = (xs, key) => xs.map((x) => `${x[key]}`).join(',');
  const sameSet = (a, b) => [...a].sort().join('|') === [...b].sort().join('|');
  const tiesOk =
    rank(single, 'cum') === rank(shown, 'total') &&
    [...new Set(single.map((t) => t.cum))].every((v) =>
      sameSet(single.filter((t) => t.cum === v).map((t) => t.name), shown.filter((w) => w.total === v).map((w) => w.name)),
    );
  check(tiesOk, `widest frames are the oracle's top functions: ${fmt(shown, 'total')}`, `oracle: ${fmt(single, 'cum')}; page widest: ${fmt(widest, 'total')}`);
  for (const w of widest.slice(0, 4)) {
    // Every one of the widest frames: never wider than its function's cum.
    const c = cum.get(w.name);
    check(c !== undefined && w.total <= c, `frame ${w.name} (${w.total}) is within its function's cum (${c})`);
  }
  for (const name of [...expect.grown, ...expect.shrunk]) {
    const w = (await page.evaluate(() => window.explorer.widest(1e6))).find((x) => x.name === name);
    check(w && w.total === cum.get(name), `${name} has the oracle's cum ${cum.get(name)}`, `page: ${w && w.total}`);
  }
  // What the page prints: the raw values over the covered seconds, to three significant digits.
  if (resp.measure === 'per_second') {
    const shownRate = (text) => {
      const m = /([\d.]+)(ns|\u00b5s|ms|s)\/s/.exec(text || '');
      return m ? Number(m[1]) * { ns: 1, '\u00b5s': 1e3, ms: 1e6, s: 1e9 }[m[2]] : NaN;
    };
    const near = (a, b) => Math.abs(a - b) <= 0.006 * b;
    const meta = await page.locator('#flame-meta').textContent();
    const want = expect.total / resp.seconds;
    check(near(shownRate(meta), want), `the page prints the total as ${meta.split(' \u00b7 ')[0]} (oracle: ${want.toFixed(0)} ns/s)`, meta);
    for (const name of [...expect.grown, ...expect.shrunk]) {
      const cells = await page.locator(`#top tbody tr[data-fn="${name}"] td`).allTextContents();
      const rate = cells[3];
      check(near(shownRate(rate), cum.get(name) / resp.seconds), `the table prints ${name}'s total as ${rate} (oracle: ${(cum.get(name) / resp.seconds).toFixed(0)} ns/s)`, cells.join(' | '));
    }
  }
  await page.screenshot({ path: `${shots}/explorer.png`, fullPage: true });
  pass('screenshot explorer.png');
}

// 2. Diff mode: first the minutes around the mark, then two ranges brushed on the timeline.
async function diff(page, settled) {
  await page.click('#mode-diff');
  await settled('switch to diff mode');
  const marks = await page.$$eval('#mark option', (os) => os.map((o) => ({ value: o.value, text: o.textContent })));
  const mark = marks.find((m) => m.text.startsWith(`${expect.mark} (`));
  check(!!mark, `the mark "${expect.mark}" is offered`, `options: ${marks.map((m) => m.text).join(', ')}`);
  const at = Number(mark.value);
  await page.selectOption('#mark', mark.value);
  // One minute either side: before is all alpha, after all beta (the run is ~30 s).
  await page.fill('#around', '1');
  await page.click('#around-apply');
  await settled('compare around the mark');
  let s = await page.evaluate(() => window.explorer.state);
  check(s.before_to === at && s.after_from === at && s.before_from < at && s.after_to > at, 'around the mark: before ends and after starts at the mark', JSON.stringify(s));
  await report(page, 'around the mark');
  await page.locator('#diff-frame').scrollIntoViewIfNeeded();
  await page.screenshot({ path: `${shots}/diff.png`, fullPage: true });
  pass('screenshot diff.png');

  // Brushing: "Before" then two drags across the timeline, clear of the mark on each side.
  await page.click('#brush-before');
  const tl = await page.locator('#timeline .u-over').boundingBox();
  const xAt = (ms) => tl.x + ((ms - expect.from) / (expect.to - expect.from)) * tl.width;
  const margin = 2000;
  const drag = async (a, b, what) => {
    // The report now in the frame is marked, so that waiting for "ready" waits for the next one.
    await page.frameLocator('#diff-frame').locator('body').evaluate((b) => (b.dataset.stale = '1'));
    await page.mouse.move(xAt(a), tl.y + tl.height / 2);
    await page.mouse.down();
    await page.mouse.move(xAt(b), tl.y + tl.height / 2, { steps: 8 });
    await page.mouse.up();
    await settled(what);
  };
  await drag(expect.from + 1000, at - margin, 'brush the before range');
  await drag(at + margin, expect.to - 1000, 'brush the after range');
  s = await page.evaluate(() => window.explorer.state);
  check(
    s.before_from >= expect.from && s.before_to < at && s.after_from > at && s.after_to <= expect.to && s.before_to - s.before_from > 5000,
    `brushed: before ${(s.before_to - s.before_from) / 1000} s ending ${(at - s.before_to) / 1000} s before the mark, after ${(s.after_to - s.after_from) / 1000} s starting ${(s.after_from - at) / 1000} s after it`,
    JSON.stringify(s),
  );
  await report(page, 'brushed ranges');
  await page.screenshot({ path: `${shots}/diff-brushed.png`, fullPage: true });
  pass('screenshot diff-brushed.png');
}

/** The diff report in the page's frame: the grown and shrunk functions, and its counts. */
async function report(page, what) {
  check(await page.locator('#diff-frame').isVisible(), `${what}: the diff report is shown in the frame`);
  const frame = page.frameLocator('#diff-frame');
  await frame.locator('body[data-ready="1"]:not([data-stale])').waitFor({ timeout: 15000 });
  const ds = await frame.locator('body').evaluate((b) => ({ ...b.dataset }));
  check(Number(ds.grown) > 0 && Number(ds.shrunk) > 0, `${what}: the report's flame graph has grown (${ds.grown}) and shrunk (${ds.shrunk}) frames`);
  const colour = async (name, cls) => {
    const row = frame.locator(`tr[data-fn="${name}"]`);
    check((await row.count()) === 1, `${what}: the report has a row for ${name}`);
    const cells = row.locator(`td.${cls}`);
    check((await cells.count()) > 0, `${what}: ${name} is ${cls === 'up' ? 'grown' : 'shrunk'} (td.${cls})`, await row.innerHTML());
    return cells.first().evaluate((td) => getComputedStyle(td).color);
  };
  const rgb = (c) => c.match(/\d+/g).map(Number);
  const red = (c) => {
    const [r, g, b] = rgb(c);
    return r > 120 && r > g + 40 && r > b + 40;
  };
  const blue = (c) => {
    const [r, g, b] = rgb(c);
    return b > 120 && b > r + 40 && b > g + 40;
  };
  for (const name of expect.grown) {
    const c = await colour(name, 'up');
    check(red(c), `${what}: ${name}'s change is drawn red (${c})`);
  }
  for (const name of expect.shrunk) {
    const c = await colour(name, 'down');
    check(blue(c), `${what}: ${name}'s change is drawn blue (${c})`);
  }
}

// 3. The targets page shows the down target and why.
async function targets(page) {
  const t = expect.down_target;
  await page.goto(`${base}/targets`);
  const rows = page.locator('tr', { has: page.locator('td', { hasText: t.address }) });
  const n = await rows.count();
  check(n > 0, `the targets page lists ${t.address} (${n} rows)`);
  for (let i = 0; i < n; i++) {
    const cells = await rows.nth(i).locator('td').allTextContents();
    const [endpoint, type, health] = cells;
    const error = cells[cells.length - 1];
    check(health === 'down', `${endpoint} (${type}) is down`, `health ${health}`);
    check(error.includes(t.error_contains), `${endpoint} (${type}) error says "${t.error_contains}": ${error}`);
  }
  await page.screenshot({ path: `${shots}/targets.png`, fullPage: true });
  pass('screenshot targets.png');
}
