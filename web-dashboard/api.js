// Reading the API. Every call is a GET: the dashboard never asks gangway to
// change anything.

/** An answer from the API that was not a success. */
export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// The API lives beside the dashboard: under `<base>/dashboard/` it is at
// `<base>/api/`, whatever `api.basePath` (or a prefix a router strips) is.
const here = window.location.pathname;
const BASE = here.includes('/dashboard/') ? here.slice(0, here.lastIndexOf('/dashboard/')) : '';

async function request(path, signal) {
  // `no-cache`: the browser keeps the answer and asks whether it changed
  // (If-None-Match); an unchanged one costs an empty 304.
  const resp = await fetch(BASE + path, { method: 'GET', headers: { accept: 'application/json' }, cache: 'no-cache', signal });
  if (!resp.ok) {
    let message = `${resp.status} ${resp.statusText}`;
    try {
      const body = await resp.json();
      if (body && body.message) message = body.message;
    } catch (_) { /* not JSON */ }
    throw new ApiError(resp.status, message);
  }
  return resp;
}

/** GETs `path` and returns its JSON. */
export async function get(path, signal) {
  return (await request(path, signal)).json();
}

/** GETs a list page and returns { items, next, total } (Traefik's X-Next-Page header, 1 on the last page; gangway's X-Total-Count). */
export async function getPage(path, signal) {
  const resp = await request(path, signal);
  const next = Number(resp.headers.get('x-next-page') || '1');
  const total = resp.headers.get('x-total-count');
  return { items: await resp.json(), next, total: total === null ? null : Number(total) };
}

/**
 * GETs `path`, answering `fallback` when the endpoint does not exist (a
 * gangway built without that part): pages show what they can.
 */
export async function optional(path, fallback, signal) {
  try {
    return await get(path, signal);
  } catch (e) {
    if (e instanceof ApiError && (e.status === 404 || e.status === 501)) return fallback;
    throw e;
  }
}

/** A query string from an object, leaving out empty values; arrays repeat the key. */
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    for (const one of Array.isArray(v) ? v : [v]) {
      if (one !== undefined && one !== null && one !== '') q.append(k, String(one));
    }
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}
