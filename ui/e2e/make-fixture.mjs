// Writes the flamegraph endpoint's answer for a synthetic 50,000-sample CPU profile:
//   node e2e/make-fixture.mjs [OUT.json] [--samples N] [--max-nodes N]
import { writeFileSync } from 'node:fs';
import { flameGraphResponse } from './fixture.mjs';

const arg = (name, dflt) => {
  const i = process.argv.indexOf(name);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const out = process.argv[2] && !process.argv[2].startsWith('--') ? process.argv[2] : 'e2e/flame-50k.json';
const fg = flameGraphResponse({ samples: arg('--samples', 50000), maxNodes: arg('--max-nodes', 8192) });
writeFileSync(out, JSON.stringify(fg));
const nodes = fg.levels.reduce((n, l) => n + l.length / 4, 0);
console.log(`${out}: ${nodes} nodes, ${fg.levels.length} levels, ${fg.names.length} names`);
