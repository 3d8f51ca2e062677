// The explorer's JSON API (docs/UI.md; served by `scraper run` under /api/v0/explore). Every
// failure becomes an Error whose message a person can read in the page: the API's own
// {"error": "..."} text when it sent one, otherwise what went wrong with the request.

export const API = '/api/v0';

/** The URL of `path` under the API with `params` (undefined and '' values left out). */
export function apiUrl(path, params = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
  }
  const s = q.toString();
  return API + path + (s ? '?' + s : '');
}

async function request(path, params, signal) {
  const url = apiUrl(path, params);
  let res;
  try {
    res = await fetch(url, { signal, headers: { accept: 'application/json, text/html' } });
  } catch (e) {
    if (e && e.name === 'AbortError') throw e;
    throw new Error(`Cannot reach scraper (${API}${path}): ${e && e.message ? e.message : e}`);
  }
  if (!res.ok) {
    let message = '';
    const text = await res.text().catch(() => '');
    try {
      const body = JSON.parse(text);
      if (body && typeof body.error === 'string') message = body.error;
    } catch {
      message = text.slice(0, 300);
    }
    const what = res.status === 404 && !message ? 'not found' : res.statusText;
    throw new Error(`${res.status} ${what || 'error'}${message ? ': ' + message : ''}`);
  }
  return res;
}

/** GET `path` and parse its JSON body. */
export async function getJSON(path, params, signal) {
  const res = await request(path, params, signal);
  const text = await res.text();
  try {
    return JSON.parse(text);
  } catch {
    throw new Error(`${path} answered with something that is not JSON: ${text.slice(0, 120)}`);
  }
}

/** GET `path` as text (the diff report's HTML). */
export async function getText(path, params, signal) {
  const res = await request(path, params, signal);
  return res.text();
}
