// The editor's message types against the server's own description of them
// (`codefy protocol --json`, kept current by the ctest web_protocol_fixture_is_current).
import { describe, expect, it } from 'vitest';
import protocol from './fixtures/protocol.json';
import {
  ENVELOPE_ERROR_CODES,
  PROGRESS_EVENT_FIELDS,
  RUN_ERROR_KINDS,
  SERVER_MESSAGE_FIELDS,
  SERVER_MESSAGE_TYPES,
} from '../src/api/types';

interface MessageSchema {
  properties: Record<string, { const?: string } | undefined>;
}

const messages = (protocol.ws_server_message.oneOf as unknown as MessageSchema[]).map((m) => ({
  type: m.properties.type?.const ?? '',
  fields: Object.keys(m.properties).filter((k) => k !== 'type'),
}));

describe('the editor speaks the server protocol', () => {
  it('knows every WebSocket message type the server sends, and no other', () => {
    expect([...SERVER_MESSAGE_TYPES].sort()).toEqual(messages.map((m) => m.type).sort());
  });

  it('declares each message type with the fields the server sends', () => {
    for (const m of messages) {
      const declared = [...SERVER_MESSAGE_FIELDS[m.type as keyof typeof SERVER_MESSAGE_FIELDS]].sort();
      expect(declared, m.type).toEqual([...m.fields].sort());
    }
  });

  it('declares every field of a training loop\'s progress events, and no other', () => {
    const events = protocol.training_progress as unknown as Record<string, { properties: Record<string, unknown> }>;
    expect(Object.keys(events).sort()).toEqual(['batch', 'config', 'epoch']);
    const fields = new Set(Object.values(events).flatMap((e) => Object.keys(e.properties)));
    expect([...PROGRESS_EVENT_FIELDS].sort()).toEqual([...fields].sort());
  });

  it('has the run error kinds and envelope codes the server uses', () => {
    expect([...RUN_ERROR_KINDS]).toEqual(protocol.run_error_kinds);
    expect([...ENVELOPE_ERROR_CODES]).toEqual(protocol.envelope_error_codes);
  });
});
