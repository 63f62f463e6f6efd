// The execution socket against a server that refuses at the handshake (HTTP
// 403, which a browser reports only as a close before opening) and against
// one that is down.
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { forgetToken } from '../src/api/auth';
import { ExecutionSocket, HANDSHAKE_REFUSED, type SocketState } from '../src/api/ws';

/** A browser WebSocket whose fate the test decides. */
class FakeSocket {
  static readonly OPEN = 1;
  static all: FakeSocket[] = [];
  readyState = 0;
  onopen: (() => void) | null = null;
  onclose: ((ev: { code: number; reason: string }) => void) | null = null;
  onmessage: ((ev: { data: string }) => void) | null = null;
  constructor(readonly url: string) {
    FakeSocket.all.push(this);
  }
  open(): void {
    this.readyState = FakeSocket.OPEN;
    this.onopen?.();
  }
  /** What a browser reports for a refused handshake or a server that is not there. */
  fail(): void {
    this.readyState = 3;
    this.onclose?.({ code: 1006, reason: '' });
  }
  send(): void {}
  close(): void {}
}

let serverUp = true;
let tokens = 0;
const fetched: string[] = [];

/** Waits until `n` sockets were made (connect() awaits the token and the health check first). */
async function socketCount(n: number, timeout = 1000): Promise<FakeSocket> {
  await vi.waitFor(() => expect(FakeSocket.all.length).toBe(n), { timeout });
  return FakeSocket.all[n - 1]!;
}

beforeEach(() => {
  FakeSocket.all = [];
  serverUp = true;
  tokens = 0;
  fetched.length = 0;
  forgetToken();
  vi.stubGlobal('WebSocket', FakeSocket);
  vi.stubGlobal('window', { location: { protocol: 'http:', host: 'localhost:8000' } });
  vi.stubGlobal('fetch', async (url: string) => {
    fetched.push(url);
    if (!serverUp) throw new TypeError('Failed to fetch');
    if (url === '/api/auth/bootstrap') return new Response(JSON.stringify({ token: `t${++tokens}` }));
    if (url === '/api/health') return new Response(JSON.stringify({ status: 'ok' }));
    return new Response('{}', { status: 404 });
  });
});

afterEach(() => {
  vi.useRealTimers();
  vi.unstubAllGlobals();
});

describe('ExecutionSocket', () => {
  it('a refusal at the handshake asks for a new token once, then says it was refused and does not retry', async () => {
    const states: [SocketState, string | undefined][] = [];
    const s = new ExecutionSocket(() => undefined, (state, reason) => states.push([state, reason]));
    const done = s.connect();
    (await socketCount(1)).fail();
    const second = await socketCount(2);
    expect(second.url).toContain('token=t2'); // asked again: a restarted server has a new token
    second.fail();
    await expect(done).rejects.toThrow(/refused/);
    expect(states.at(-1)).toEqual(['closed', HANDSHAKE_REFUSED]);
    expect(fetched.filter((u) => u === '/api/health')).toHaveLength(2);
    await new Promise((r) => setTimeout(r, 1200)); // longer than the first retry's wait
    expect(FakeSocket.all).toHaveLength(2);
  });

  it('a stale token after a server restart: the second try with a new token opens', async () => {
    const states: SocketState[] = [];
    const s = new ExecutionSocket(() => undefined, (state) => states.push(state));
    const done = s.connect();
    (await socketCount(1)).fail();
    (await socketCount(2)).open();
    await expect(done).resolves.toBeUndefined();
    expect(states).toEqual(['connecting', 'open']);
  });

  it('a server that is down is not reported as a refusal, and a connection that was up is retried', async () => {
    const states: [SocketState, string | undefined][] = [];
    const s = new ExecutionSocket(() => undefined, (state, reason) => states.push([state, reason]));
    const first = s.connect();
    (await socketCount(1)).open();
    await first;
    serverUp = false;
    FakeSocket.all[0]!.fail(); // the server went away
    await vi.waitFor(() => expect(states.at(-1)).toEqual(['closed', undefined]));
    serverUp = true;
    const retry = await socketCount(2, 3000); // retried after its backoff (1 s), with the same token
    expect(retry.url).toContain('token=t1');
    retry.open();
    await vi.waitFor(() => expect(states.at(-1)).toEqual(['open', undefined]));
  });
});
