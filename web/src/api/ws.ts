// The execution WebSocket: one connection, JSON messages in and out, and a
// reconnect with backoff when a connection that was up goes down.
import { forgetToken, webSocketUrl } from './auth';
import type { ServerMessage } from './types';

export type SocketState = 'closed' | 'connecting' | 'open';

/** The reason given when the server refused the handshake (HTTP 403: token, Origin or Host). */
export const HANDSHAKE_REFUSED = 'handshake-refused';

/** A handshake that failed while the server answers HTTP: a refusal, not an outage. */
class Refused extends Error {}

/** Whether the server answers at all (it is up, so a failed handshake was refused). */
async function serverAnswers(): Promise<boolean> {
  try {
    return (await fetch('/api/health', { cache: 'no-store' })).ok;
  } catch {
    return false;
  }
}

const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 15000;

export class ExecutionSocket {
  private ws: WebSocket | null = null;
  private wasOpen = false;
  private retries = 0;
  private retryTimer: ReturnType<typeof setTimeout> | null = null;
  private closing = false;

  constructor(
    private readonly onMessage: (m: ServerMessage) => void,
    private readonly onState: (s: SocketState, reason?: string) => void,
    private readonly path = '/ws/execution',
  ) {}

  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Opens the connection (once); resolves when it is open. */
  async connect(): Promise<void> {
    if (this.isOpen) return;
    this.closing = false;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = null;
    this.onState('connecting');
    try {
      await this.attempt(false);
    } catch (e) {
      if (!(e instanceof Refused)) throw e;
      // A restarted server has a new session token: ask for it once, then try again.
      forgetToken();
      await this.attempt(true);
    }
  }

  private async attempt(last: boolean): Promise<void> {
    const ws = new WebSocket(await webSocketUrl(this.path));
    this.ws = ws;
    let opened = false;
    ws.onmessage = (ev) => {
      let msg: ServerMessage;
      try {
        msg = JSON.parse(String(ev.data)) as ServerMessage;
      } catch {
        return;
      }
      this.onMessage(msg);
    };
    await new Promise<void>((resolve, reject) => {
      ws.onopen = () => {
        opened = true;
        this.wasOpen = true;
        this.retries = 0;
        this.onState('open');
        resolve();
      };
      ws.onclose = (ev) => {
        if (this.ws === ws) this.ws = null;
        void (async () => {
          // The server refuses at the handshake (403), which a browser reports
          // only as a close before opening: asking the server tells that from an outage.
          const refused = !opened && !this.closing && (await serverAnswers());
          if (refused && !last) return reject(new Refused('refused'));
          // 4401: a bad token; 4003: Host/Origin refused (close codes of servers that accept first).
          const coded = ev.code === 4401 || ev.code === 4003 ? ev.reason || `code ${ev.code}` : undefined;
          this.onState('closed', refused ? HANDSHAKE_REFUSED : coded);
          reject(new Error(refused ? 'the server refused the connection (HTTP 403)' : ev.reason || `WebSocket closed (${ev.code})`));
          // Retrying a refusal would only be refused again.
          if (!this.closing && this.wasOpen && !refused) this.scheduleRetry();
        })();
      };
    });
  }

  private scheduleRetry(): void {
    const delay = Math.min(RETRY_FIRST_MS * 2 ** this.retries, RETRY_MAX_MS);
    this.retries++;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.connect().catch(() => undefined);
    }, delay);
  }

  /** Sends one message; false when the connection is not open. */
  send(message: object): boolean {
    if (!this.isOpen || !this.ws) return false;
    this.ws.send(JSON.stringify(message));
    return true;
  }

  close(): void {
    this.closing = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.ws?.close();
    this.ws = null;
  }
}
