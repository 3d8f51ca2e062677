// Builds the explorer into ../src/server/explore/assets/ (or the folder named by --out DIR or
// the OUT_DIR environment variable): explore.html, explore.js, explore.css. Deterministic: no
// timestamps, no absolute paths, no source maps, so tests/ui_assets.rs can rebuild and compare
// with the committed files.
import { build } from 'esbuild';
import { copyFile, mkdir, readFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const flag = process.argv.indexOf('--out');
const out = resolve(flag > 0 ? process.argv[flag + 1] : process.env.OUT_DIR || join(here, '../src/server/explore/assets'));

await mkdir(out, { recursive: true });
const common = {
  bundle: true,
  minify: true,
  sourcemap: false,
  target: ['es2020'],
  charset: 'utf8',
  legalComments: 'eof',
  absWorkingDir: here,
  logLevel: 'warning',
};
// uPlot's notice is a plain comment, which minifying drops; its MIT licence asks to keep it.
const uplot = JSON.parse(await readFile(join(here, 'node_modules/uplot/package.json'), 'utf8'));
const notice = `/*! uPlot ${uplot.version} (c) Leon Sorokin, MIT License, https://github.com/leeoniya/uPlot */`;
await build({ ...common, entryPoints: ['src/main.js'], outfile: join(out, 'explore.js'), format: 'iife', banner: { js: notice } });
await build({ ...common, entryPoints: ['src/explore.css'], outfile: join(out, 'explore.css'), banner: { css: notice } });
await copyFile(join(here, 'src/explore.html'), join(out, 'explore.html'));
console.log(`built explore.{html,js,css} into ${out}`);
