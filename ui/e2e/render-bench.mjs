// How fast the explorer lays out and draws a flame graph in headless Chromium (issue 22's
// target: a 50,000-sample profile in under 300 ms). Prints the figures; asserts nothing.
//
//   node e2e/render-bench.mjs                      # the dev server with a 50,000-sample fixture
//   EXPLORER_URL='http://127.0.0.1:12345/explore?type=...&from=...&to=...' node e2e/render-bench.mjs
//
// Without EXPLORER_URL it generates the fixture (e2e/fixture.mjs: 50,000 samples, cut to
// MAX_NODES, default 8192, like the flamegraph endpoint), starts dev/server.mjs serving it and
// the built assets, and opens /explore. It reports the first render (decode the levels, lay
// out, draw) and RUNS more renders of the same graph (window.explorer.rerender()).
import { writeFileSync, mkdtempSync } from 'node:fs';
import { tmpdir, cpus } from 'node:os';
import { join } from 'node:path';
import { chromium } from 'playwright-core';
import { launchOptions } from './browser.mjs';
import { flameGraphResponse } from './fixture.mjs';
import { startDevServer } from './devserver.mjs';

const samples = Number(process.env.SAMPLES || 50000);
const maxNodes = Number(process.env.MAX_NODES || 8192);
const runs = Number(process.env.RUNS || 20);

let server = null;
let url = process.env.EXPLORER_URL;
if (!url) {
  const fg = flameGraphResponse({ samples, maxNodes });
  const file = join(mkdtempSync(join(tmpdir(), 'explorer-bench-')), 'flame.json');
  writeFileSync(file, JSON.stringify(fg));
  const nodes = fg.levels.reduce((n, l) => n + l.length / 4, 0);
  console.log(`fixture: ${samples} samples, ${nodes} nodes in ${fg.levels.length} levels (max_nodes ${maxNodes})`);
  server = await startDevServer({ FLAME_FIXTURE: file });
  url = `${server.base}/explore`;
}

const browser = await chromium.launch(launchOptions());
try {
  const page = await browser.newPage({ viewport: { width: 1600, height: 1000 } });
  const started = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => ['ready', 'empty', 'error'].includes(document.body.dataset.state), null, { timeout: 60000 });
  const loaded = Date.now() - started;
  const first = await page.evaluate(() => ({ state: document.body.dataset.state, frames: document.body.dataset.frames, ms: window.explorer.lastRenderMs }));
  if (first.state !== 'ready') throw new Error(`the page is ${first.state}: nothing to measure`);
  const times = [];
  const framed = [];
  for (let i = 0; i < runs; i++) {
    // rerender() times the script's work; canvas pixels reach the screen with the next frame,
    // so the time until a frame after it has been produced is recorded too.
    const [ms, toFrame] = await page.evaluate(
      () =>
        new Promise((resolve) => {
          const t0 = performance.now();
          const ms = window.explorer.rerender();
          requestAnimationFrame(() => setTimeout(() => resolve([ms, performance.now() - t0]), 0));
        }),
    );
    times.push(ms);
    framed.push(toFrame);
  }
  const median = (xs) => xs.slice().sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  times.sort((a, b) => a - b);
  const browserVersion = browser.version();
  console.log(`chromium ${browserVersion}, ${cpus().length} CPUs (${cpus()[0].model.trim()}), viewport 1600 px`);
  console.log(`page ready after ${loaded} ms (fetch + decode + draw + table)`);
  console.log(`first render: ${first.ms.toFixed(1)} ms, ${first.frames} frames drawn`);
  console.log(`re-render x${runs}: median ${median(times).toFixed(1)} ms, min ${times[0].toFixed(1)} ms, max ${times[times.length - 1].toFixed(1)} ms`);
  console.log(`re-render until the next frame is out: median ${median(framed).toFixed(1)} ms, max ${Math.max(...framed).toFixed(1)} ms`);
} finally {
  await browser.close();
  if (server) server.stop();
}
