// Humanised values, the same way as src/diff/units.rs (and src/diff/assets/diff.js) format
// them: "12.3ms" for nanoseconds, "1.20MiB" for bytes, "4.56k" for counts. Keep them in step.

/** Three significant digits without exponents: 0.0123, 1.23, 12.3, 123, 1234. */
export function sig3(v) {
  if (v === 0) return '0';
  if (v >= 99.95) return v.toFixed(0);
  if (v >= 9.995) return v.toFixed(1);
  // Dividing by 0.9995 picks the decimals of the rounded value: 0.9997 is "1.00".
  const decimals = 2 - Math.min(0, Math.floor(Math.log10(v / 0.9995)));
  return v.toFixed(Math.max(2, Math.min(12, decimals)));
}

/** The largest unit that keeps the number at least 1 once rounded (999.6 is "1.00k"). */
function scale(a, step, units) {
  let i = 0;
  while (a >= step * 0.9995 && i + 1 < units.length) {
    a /= step;
    i++;
  }
  return [a, units[i]];
}

function time(s) {
  if (s === 0) return [0, 's'];
  if (s < 1e-6 * 0.9995) return [s * 1e9, 'ns'];
  if (s < 1e-3 * 0.9995) return [s * 1e6, '\u00b5s'];
  if (s < 0.9995) return [s * 1e3, 'ms'];
  return [s, 's'];
}

/** `v` in `unit`, e.g. formatValue(12300000, 'nanoseconds') is "12.3ms". */
export function formatValue(v, unit) {
  if (v === null || v === undefined) v = 0;
  if (!Number.isFinite(v)) return String(v);
  const sign = v < 0 ? '-' : '';
  const a = Math.abs(v);
  let r;
  switch (unit) {
    case 'nanoseconds': case 'ns': r = time(a * 1e-9); break;
    case 'microseconds': case 'us': r = time(a * 1e-6); break;
    case 'milliseconds': case 'ms': r = time(a * 1e-3); break;
    case 'seconds': case 's': r = time(a); break;
    case 'bytes': case 'B': r = scale(a, 1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']); break;
    default:
      r = scale(a, 1000, ['', 'k', 'M', 'G', 'T', 'P']);
      if (unit && unit !== 'count' && unit !== 'samples') r[1] += ' ' + unit;
  }
  return sign + sig3(r[0]) + r[1];
}

/** Whether `unit` measures time (then a rate of it is a number of cores busy). */
export function isTime(unit) {
  return ['nanoseconds', 'ns', 'microseconds', 'us', 'milliseconds', 'ms', 'seconds', 's'].includes(unit);
}

/**
 * A normalised value as its measure reads: per_second values get "/s" ("1.20s/s", which for
 * CPU is 1.2 cores busy), averages (heap in use, goroutines) stay plain; "0" for nothing.
 */
export function formatMeasured(v, unit, measure) {
  if (!v) return '0';
  return formatValue(v, unit) + (measure === 'per_second' ? '/s' : '');
}

/** "12.3%" of `total`, or "" when there is no total. */
export function formatShare(v, total) {
  return total > 0 ? ((v / total) * 100).toFixed(v / total >= 0.1 ? 1 : 2) + '%' : '';
}

/** A window's length for people: "15m", "1h30m", "2d". */
export function formatSpan(ms) {
  let s = Math.round(ms / 1000);
  if (s < 60) return s + 's';
  const parts = [];
  const d = Math.floor(s / 86400);
  s -= d * 86400;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (d) parts.push(d + 'd');
  if (h) parts.push(h + 'h');
  if (m) parts.push(m + 'm');
  if (s && !d) parts.push(s + 's');
  return parts.join('');
}

/** "2026-11-26 20:25:05" in local time, for range labels. */
export function formatTime(ms) {
  const t = new Date(ms);
  const p = (n) => String(n).padStart(2, '0');
  return `${t.getFullYear()}-${p(t.getMonth() + 1)}-${p(t.getDate())} ${p(t.getHours())}:${p(t.getMinutes())}:${p(t.getSeconds())}`;
}
