// Screenshots of the explorer for a person to look at (development aid):
//   node e2e/shot.mjs URL OUT.png [width] [height]
// Prints the page's state, frame count, console errors and render time.
import { chromium } from 'playwright-core';
import { launchOptions } from './browser.mjs';

const [url, out, w = '1400', h = '1500'] = process.argv.slice(2);
const browser = await chromium.launch(launchOptions());
try {
  const page = await browser.newPage({ viewport: { width: Number(w), height: Number(h) } });
  const errors = [];
  page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(url);
  await page.waitForFunction(() => document.body.dataset.state && document.body.dataset.state !== 'loading', null, { timeout: 30000 });
  if (process.env.ACTION) await page.evaluate(process.env.ACTION);
  await page.waitForTimeout(300);
  await page.screenshot({ path: out, fullPage: true });
  const info = await page.evaluate(() => ({ state: document.body.dataset.state, frames: document.body.dataset.frames, ms: window.explorer && window.explorer.lastRenderMs, errors: document.documentElement.dataset.errors }));
  console.log(JSON.stringify({ ...info, console: errors }));
} finally {
  await browser.close();
}
