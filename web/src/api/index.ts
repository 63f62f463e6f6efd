export * from './rest';
export * from './types';
export { ExecutionSocket, type SocketState } from './ws';
export { sessionToken } from './auth';
