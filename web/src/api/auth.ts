// The session token: fetched once from /api/auth/bootstrap (loopback clients
// only), sent as X-CodefyUI-Token on every mutating request and as ?token=
// on the WebSocket, whose handshake cannot carry custom headers.

const TOKEN_HEADER = 'X-CodefyUI-Token';
const MUTATING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

let token: string | null = null;
let pending: Promise<string> | null = null;

/** The session token, asked for once and then cached. */
export function sessionToken(): Promise<string> {
  if (token !== null) return Promise.resolve(token);
  if (pending) return pending;
  pending = (async () => {
    try {
      const res = await fetch('/api/auth/bootstrap');
      if (!res.ok) throw new Error(`token bootstrap failed: HTTP ${res.status}`);
      const body = (await res.json()) as { token?: unknown };
      if (typeof body.token !== 'string') throw new Error('token bootstrap: no token in the answer');
      token = body.token;
      return token;
    } finally {
      pending = null;
    }
  })();
  return pending;
}

/** Forgets the token, e.g. after the server restarted with a new one (403). */
export function forgetToken(): void {
  token = null;
}

/** fetch(), with the token on mutating methods. */
export async function apiFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const method = (init.method ?? 'GET').toUpperCase();
  if (!MUTATING.has(method)) return fetch(url, init);
  const headers = new Headers(init.headers);
  headers.set(TOKEN_HEADER, await sessionToken());
  const res = await fetch(url, { ...init, headers });
  if (res.status !== 403) return res;
  // A restarted server has a new token: ask again once.
  forgetToken();
  headers.set(TOKEN_HEADER, await sessionToken());
  return fetch(url, { ...init, headers });
}

/** ws(s)://<this host><path>?token=... */
export async function webSocketUrl(path: string): Promise<string> {
  const t = await sessionToken();
  const protocol = window.location.protocol === 'https:' ? 'wss:' : 'ws:';
  const url = new URL(`${protocol}//${window.location.host}${path}`);
  url.searchParams.set('token', t);
  return url.toString();
}
