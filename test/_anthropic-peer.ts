// A real Anthropic Messages API server on loopback for adapter tests. It is as strict as Anthropic
// about what it accepts (x-api-key, anthropic-version, max_tokens, the message and content block
// shapes, no unknown fields) and answers in Anthropic's shapes; replies are scriptable (success,
// refusals, 429/529/5xx, malformed bodies, hangs, resets) and every request is recorded.

import type { IncomingMessage } from 'node:http';
import { sse, startLoopbackPeer, streamOf, type LoopbackPeer, type PeerReply, type PeerRequest as LoopbackRequest, type Script as LoopbackScript, type StreamOpts } from './_peer.ts';

export type { PeerReply, StreamOpts } from './_peer.ts';

export interface PeerRequest extends LoopbackRequest {
  /** The 4xx the peer answered itself because the request broke the protocol, else null. */
  invalid: { status: number; type: string; message: string } | null;
}

/** Replies for the next valid requests: an array is consumed in order, then defaults apply. */
export type Script = LoopbackScript<PeerRequest>;

export interface AnthropicPeer extends LoopbackPeer<PeerRequest> {
  /** Base URL for a catalog entry's `upstream.baseUrl` (ends in /v1, like https://api.anthropic.com/v1). */
  url: string;
}

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens?: number;
  cache_read_input_tokens?: number;
}

let seq = 0;

/** A Messages API answer: one text block per string. */
export function messageReply(text: string | string[], usage: Usage = { input_tokens: 12, output_tokens: 34 }, stopReason = 'end_turn'): PeerReply {
  const n = ++seq;
  return {
    headers: { 'request-id': `req_peer${n}` },
    json: {
      id: `msg_peer${n}`,
      type: 'message',
      role: 'assistant',
      model: 'claude-peer',
      content: (Array.isArray(text) ? text : [text]).map((t) => ({ type: 'text', text: t, citations: null })),
      stop_reason: stopReason,
      stop_sequence: null,
      usage: { cache_creation_input_tokens: 0, cache_read_input_tokens: 0, service_tier: 'standard', ...usage },
    },
  };
}

/**
 * A streamed Message as Anthropic writes it: message_start (input usage, output_tokens 1), a ping,
 * per text block content_block_start / one content_block_delta per piece / content_block_stop,
 * message_delta (stop_reason, cumulative output usage), message_stop. `thinking` pieces come first
 * in a thinking block. The error event is an `error` event (`overloaded_error` unless told).
 */
export function messageStream(
  blocks: string[][],
  usage: Usage = { input_tokens: 12, output_tokens: 34 },
  opts: StreamOpts & { stopReason?: string; thinking?: string[]; errorType?: string } = {},
): PeerReply {
  const n = ++seq;
  const ev = (type: string, body: Record<string, unknown>) => sse({ type, ...body }, type);
  const { output_tokens, ...input } = usage;
  const events = [
    ev('message_start', {
      message: {
        id: `msg_peer${n}`, type: 'message', role: 'assistant', model: 'claude-peer', content: [], stop_reason: null, stop_sequence: null,
        usage: { cache_creation_input_tokens: 0, cache_read_input_tokens: 0, service_tier: 'standard', ...input, output_tokens: 1 },
      },
    }),
    ev('ping', {}),
  ];
  let index = 0;
  if (opts.thinking) {
    events.push(ev('content_block_start', { index, content_block: { type: 'thinking', thinking: '', signature: '' } }));
    for (const t of opts.thinking) events.push(ev('content_block_delta', { index, delta: { type: 'thinking_delta', thinking: t } }));
    events.push(ev('content_block_delta', { index, delta: { type: 'signature_delta', signature: 'c2ln' } }));
    events.push(ev('content_block_stop', { index }));
    index++;
  }
  for (const pieces of blocks) {
    events.push(ev('content_block_start', { index, content_block: { type: 'text', text: '', citations: null } }));
    for (const p of pieces) events.push(ev('content_block_delta', { index, delta: { type: 'text_delta', text: p } }));
    events.push(ev('content_block_stop', { index }));
    index++;
  }
  events.push(ev('message_delta', { delta: { stop_reason: opts.stopReason ?? 'end_turn', stop_sequence: null }, usage: { output_tokens } }));
  const error = ev('error', { error: { type: opts.errorType ?? 'overloaded_error', message: 'Overloaded' } });
  return streamOf(events, { ...opts, headers: { 'request-id': `req_peer${n}`, ...opts.headers } }, [ev('message_stop', {})], error);
}

/** Anthropic's error envelope. */
export function errorReply(status: number, type: string, message = 'upstream says no', headers: Record<string, string> = {}): PeerReply {
  return { status, headers: { 'request-id': `req_err${++seq}`, ...headers }, json: { type: 'error', error: { type, message }, request_id: `req_err${seq}` } };
}

const VERSIONS = new Set(['2023-01-01', '2023-06-01']);
const TOP_LEVEL = new Set([
  'model', 'max_tokens', 'messages', 'system', 'metadata', 'stop_sequences', 'stream', 'temperature', 'top_k', 'top_p',
  'thinking', 'tools', 'tool_choice', 'service_tier', 'container', 'mcp_servers', 'output_config', 'context_management',
]);
const MEDIA_TYPES = new Set(['image/jpeg', 'image/png', 'image/gif', 'image/webp']);

type Invalid = { status: number; type: string; message: string };
const invalid = (message: string): Invalid => ({ status: 400, type: 'invalid_request_error', message });

function checkBlock(b: any, where: string): Invalid | null {
  if (!b || typeof b !== 'object') return invalid(`${where}: Input should be a valid dictionary`);
  if (b.type === 'text') {
    if (typeof b.text !== 'string') return invalid(`${where}.text: Field required`);
    if (b.text.trim() === '') return invalid(`${where}: text content blocks must contain non-whitespace text`);
    return null;
  }
  if (b.type === 'image') {
    const s = b.source;
    if (s?.type === 'base64') {
      if (!MEDIA_TYPES.has(s.media_type)) return invalid(`${where}.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'`);
      if (typeof s.data !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(s.data)) return invalid(`${where}.source.base64.data: invalid base64 data`);
      return null;
    }
    if (s?.type === 'url') return typeof s.url === 'string' && /^https:\/\//.test(s.url) ? null : invalid(`${where}.source.url.url: must be an https URL`);
    return invalid(`${where}.source: Input tag '${String(s?.type)}' found using 'type' does not match any of the expected tags`);
  }
  return invalid(`${where}: Input tag '${String(b.type)}' found using 'type' does not match any of the expected tags`);
}

/** What Anthropic refuses before it runs a model. */
function validate(req: IncomingMessage, path: string, json: any, key: string | null): Invalid | null {
  if (req.method !== 'POST' || path !== '/v1/messages') return { status: 404, type: 'not_found_error', message: 'Not Found' };
  const given = req.headers['x-api-key'];
  if (!given) return { status: 401, type: 'authentication_error', message: 'x-api-key header is required' };
  if (key !== null && given !== key) return { status: 401, type: 'authentication_error', message: 'invalid x-api-key' };
  const version = req.headers['anthropic-version'];
  if (!version) return invalid('anthropic-version: header is required');
  if (!VERSIONS.has(String(version))) return invalid(`anthropic-version: invalid version ${String(version)}`);
  if (!String(req.headers['content-type'] ?? '').startsWith('application/json')) return invalid('Content-Type must be application/json');
  if (!json || typeof json !== 'object' || Array.isArray(json)) return invalid('There was an error parsing the body of your request');
  for (const k of Object.keys(json)) if (!TOP_LEVEL.has(k)) return invalid(`${k}: Extra inputs are not permitted`);
  if (typeof json.model !== 'string' || json.model === '') return invalid('model: Field required');
  if (json.max_tokens === undefined) return invalid('max_tokens: Field required');
  if (!Number.isInteger(json.max_tokens) || json.max_tokens < 1) return invalid('max_tokens: Input should be a valid integer greater than or equal to 1');
  if (json.stream !== undefined && typeof json.stream !== 'boolean') return invalid('stream: Input should be a valid boolean');
  if (json.system !== undefined && typeof json.system !== 'string') {
    if (!Array.isArray(json.system)) return invalid('system: Input should be a valid string or list');
    for (const [i, b] of json.system.entries()) {
      if (b?.type !== 'text') return invalid(`system.${i}: only text blocks are allowed`);
      const e = checkBlock(b, `system.${i}`);
      if (e) return e;
    }
  }
  if (!Array.isArray(json.messages) || json.messages.length === 0) return invalid('messages: at least one message is required');
  for (const [i, m] of json.messages.entries()) {
    if (m?.role !== 'user' && m?.role !== 'assistant') return invalid(`messages.${i}.role: Input should be 'user' or 'assistant'`);
    if (i === 0 && m.role !== 'user') return invalid('messages: first message must use the "user" role');
    if (typeof m.content === 'string') {
      if (m.content.trim() === '') return invalid(`messages.${i}: user messages must have non-empty content`);
      continue;
    }
    if (!Array.isArray(m.content) || m.content.length === 0) return invalid(`messages.${i}: user messages must have non-empty content`);
    for (const [j, b] of m.content.entries()) {
      const e = checkBlock(b, `messages.${i}.content.${j}`);
      if (e) return e;
    }
  }
  return null;
}

/** `key`: the only x-api-key accepted (null accepts any non-empty key, as a proxy would). */
export async function startAnthropicPeer(opts: { key?: string | null } = {}): Promise<AnthropicPeer> {
  const key = opts.key ?? null;
  const peer = await startLoopbackPeer<PeerRequest>((r) => (r.json?.stream === true ? messageStream([['peer ', 'reply']]) : messageReply('peer reply')), {
    describe: (req, base) => ({ ...base, invalid: validate(req, base.path, base.json, key) }),
    refuse: (r) => (r.invalid ? errorReply(r.invalid.status, r.invalid.type, r.invalid.message) : null),
  });
  return { ...peer, url: `${peer.origin}/v1` };
}
