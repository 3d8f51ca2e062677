// Starts dev/server.mjs on a free port for a script and returns {url, stop}.
import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));

export async function startDevServer(env = {}) {
  const child = spawn(process.execPath, [join(here, '../dev/server.mjs'), '--port', '0'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const base = await new Promise((resolve, reject) => {
    child.stdout.once('data', (d) => {
      const m = /(http:\/\/[^/\s]+)/.exec(String(d));
      if (m) resolve(m[1]);
      else reject(new Error(`dev server said: ${d}`));
    });
    child.once('exit', (code) => reject(new Error(`dev server exited with ${code}`)));
  });
  return { base, stop: () => child.kill() };
}
