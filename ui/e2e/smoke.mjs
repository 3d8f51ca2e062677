// Drives the explorer against the dev server (dev/server.mjs) in headless Chromium and checks
// what a person would: the flame graph draws, hover shows a tooltip, click zooms, search
// counts matches, the table sorts and opens the sandwich view, diff mode loads a report, and
// empty and failing answers show readable messages. Exits 1 when a check fails.
//   node e2e/smoke.mjs [BASE_URL]
// Without BASE_URL it starts dev/server.mjs itself (ASSETS_DIR picks the assets it serves;
// DIFF_HTML a real diff report, which is then checked to draw inside the page's frame).
// SHOTS=DIR keeps screenshots of each step there.
import { chromium } from 'playwright-core';
import { launchOptions } from './browser.mjs';
import { startDevServer } from './devserver.mjs';

const server = process.argv[2] ? null : await startDevServer();
const base = process.argv[2] || server.base;
const shots = process.env.SHOTS;
const shot = (target, name, opts = {}) => (shots ? target.screenshot({ path: `${shots}/${name}`, ...opts }) : null);
const failures = [];
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failures.push(what);
};

const browser = await chromium.launch(launchOptions());
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  const settled = () => page.waitForFunction(() => document.body.dataset.state !== 'loading', null, { timeout: 20000 });

  await page.goto(`${base}/explore`);
  await settled();
  check((await page.evaluate(() => document.body.dataset.state)) === 'ready', 'page is ready');
  const frames = Number(await page.evaluate(() => document.body.dataset.frames));
  check(frames > 100, `flame graph drew ${frames} frames`);
  const widest = await page.evaluate(() => window.explorer.widest(3));
  check(widest.length === 3 && widest[0].total >= widest[1].total, `widest frames: ${widest.map((w) => w.name).join(', ')}`);

  // Hover the second row's first frame.
  const box = await page.locator('#flame canvas').boundingBox();
  await page.mouse.move(box.x + 20, box.y + 18 + 9);
  check(await page.locator('#tip').isVisible(), 'hover shows the tooltip');
  const tip = await page.locator('#tip').textContent();
  check(/\/s/.test(tip) && /cores/.test(tip) && /%/.test(tip), `tooltip has rate, cores and share: ${tip.slice(0, 120)}`);
  await shot(page, 'explore-hover.png');

  await page.mouse.click(box.x + 20, box.y + 18 + 9);
  const focus = await page.evaluate(() => document.body.dataset.focus);
  check(!!focus, `click zooms into ${focus}`);
  check(await page.locator('#sandwich-open').isEnabled(), 'sandwich button is enabled after zooming');
  await page.click('#reset');
  check((await page.evaluate(() => document.body.dataset.focus)) === '', 'reset zooms out');

  await page.fill('#search', 'json');
  const matches = Number(await page.evaluate(() => document.body.dataset.matches));
  check(matches > 0, `search "json" matches ${matches} frames: ${await page.locator('#search-status').textContent()}`);
  const share = Number(await page.evaluate(() => document.body.dataset.matchedShare));
  check(share > 0 && share <= 1, `matched share ${share} is a share of the total`);
  check(new URL(page.url()).searchParams.get('search') === 'json', 'search is in the URL');
  await shot(page, 'explore-search.png');
  await page.fill('#search', '');

  // Sort by total, then open the top row's sandwich.
  await page.click('#top th[data-key="total"]');
  const totals = await page.$$eval('#top tbody tr', (rows) => rows.slice(0, 5).map((r) => r.dataset.fn));
  check(totals.length === 5, `sorted by total: ${totals.join(', ')}`);
  const row = totals.findIndex((name) => name !== 'other' && name !== totals[0]);
  const fn = totals[row];
  await page.click(`#top tbody tr:nth-child(${row + 1})`);
  check(await page.locator('#sandwich-panel').isVisible(), `sandwich view of ${fn} opens`);
  check(new URL(page.url()).searchParams.get('fn') === fn, 'the sandwich function is in the URL');
  await shot(page.locator('#sandwich-panel'), 'explore-sandwich.png');

  // A linked view restores the sandwich.
  await page.goto(page.url());
  await settled();
  check(await page.locator('#sandwich-panel').isVisible(), 'reloading the URL restores the sandwich view');

  // Brushing the timeline selects a range and reloads the flame graph.
  const tl = await page.locator('#timeline .u-over').boundingBox();
  await page.mouse.move(tl.x + tl.width * 0.6, tl.y + tl.height / 2);
  await page.mouse.down();
  await page.mouse.move(tl.x + tl.width * 0.8, tl.y + tl.height / 2, { steps: 5 });
  await page.mouse.up();
  await settled();
  const u = new URL(page.url()).searchParams;
  check(Number(u.get('sel_from')) < Number(u.get('sel_to')) && u.get('from'), 'brushing sets sel_from/sel_to and freezes the window');
  await shot(page, 'explore-brushed.png', { fullPage: true });

  // Diff mode around a mark.
  await page.click('#mode-diff');
  await page.click('#around-apply');
  await settled();
  check(await page.locator('#diff-frame').isVisible(), 'diff mode shows the report in an iframe');
  const du = new URL(page.url()).searchParams;
  check(du.get('mode') === 'diff' && Number(du.get('after_from')) === Number(du.get('before_to')), 'around-mark ranges are in the URL');
  if (process.env.DIFF_HTML) {
    // A real `scraper diff --html` report: its own script ran inside the frame.
    const frame = page.frameLocator('#diff-frame');
    await frame.locator('body[data-ready="1"]').waitFor({ timeout: 10000 });
    const drawn = Number(await frame.locator('body').getAttribute('data-frames'));
    check(drawn > 0, `the diff report drew its flame graph (${drawn} frames) inside the page`);
  }
  await shot(page, 'explore-diff.png', { fullPage: true });

  // Empty and failing answers read as messages.
  await page.goto(`${base}/explore?query=${encodeURIComponent('{service_name="none"}')}`);
  await settled();
  check((await page.evaluate(() => document.body.dataset.state)) === 'empty', 'no data: state empty');
  check(/No samples/.test(await page.locator('#flame-msg').textContent()), 'no data: a message says so');
  await page.goto(`${base}/explore?query=${encodeURIComponent('{service_name="broken"}')}`);
  await settled();
  check((await page.evaluate(() => document.body.dataset.state)) === 'error', 'API error: state error');
  const msg = await page.locator('#flame-msg').textContent();
  check(/checksum mismatch/.test(msg), `API error is shown: ${msg}`);
  await shot(page, 'explore-error.png');

  // Answers the dev server does not give, injected in the browser: no store configured, the
  // scraper unreachable, a flame graph whose levels are broken.
  await page.route('**/api/v0/explore/catalog*', (r) => r.fulfill({ status: 404, contentType: 'application/json', body: '{"error":"no pyroscope.store is configured"}' }));
  await page.goto(`${base}/explore`);
  await settled();
  const banner = await page.locator('#banner').textContent();
  check((await page.evaluate(() => document.body.dataset.state)) === 'error' && /no pyroscope.store is configured/.test(banner), `no store: ${banner}`);
  await page.unroute('**/api/v0/explore/catalog*');
  await page.route('**/api/v0/explore/timeline*', (r) => r.abort('connectionrefused'));
  await page.route('**/api/v0/explore/flamegraph*', (r) => r.fulfill({ status: 200, contentType: 'application/json', body: '{"names":["total"],"levels":[[0,10,0,0],[0,5,5,7]],"total":10,"unit":"nanoseconds","measure":"per_second","seconds":1}' }));
  await page.goto(`${base}/explore`);
  await settled();
  const unreachable = await page.locator('#timeline-msg').textContent();
  check(/Cannot reach scraper/.test(unreachable), `unreachable: ${unreachable}`);
  const broken = await page.locator('#flame-msg').textContent();
  check(/outside names/.test(broken), `broken levels: ${broken}`);
  await page.unroute('**/api/v0/explore/timeline*');
  await page.unroute('**/api/v0/explore/flamegraph*');

  const expected = (e) => /status of (500|400|404)|ERR_CONNECTION_REFUSED/.test(e);
  const unexpected = errors.filter((e) => !expected(e));
  check(unexpected.length === 0, `no script errors ${unexpected.join(' | ')}`);
} finally {
  await browser.close();
  if (server) server.stop();
}
if (failures.length) {
  console.log(`${failures.length} check(s) failed`);
  process.exit(1);
}
console.log('all checks passed');
