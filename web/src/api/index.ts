export * from './rest';
export * from './types';
export { ExecutionSocket, HANDSHAKE_REFUSED, type SocketState } from './ws';
export { sessionToken } from './auth';
