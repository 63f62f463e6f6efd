// The execution WebSocket: one connection, JSON messages in and out, and a
// reconnect with backoff when a connection that was up goes down.
import { webSocketUrl } from './auth';
import type { ServerMessage } from './types';

export type SocketState = 'closed' | 'connecting' | 'open';

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
    const ws = new WebSocket(await webSocketUrl(this.path));
    this.ws = ws;
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
        this.wasOpen = true;
        this.retries = 0;
        this.onState('open');
        resolve();
      };
      ws.onclose = (ev) => {
        if (this.ws === ws) this.ws = null;
        // 4401: a bad token; 4003: Host/Origin refused (CodefyUI's codes).
        this.onState('closed', ev.code === 4401 || ev.code === 4003 ? ev.reason || `code ${ev.code}` : undefined);
        reject(new Error(ev.reason || `WebSocket closed (${ev.code})`));
        if (!this.closing && this.wasOpen) this.scheduleRetry();
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
