// A loopback OTLP/HTTP trace receiver for tests: POST /v1/traces in http/protobuf (decoded here
// from the protobuf wire format: ExportTraceServiceRequest → ResourceSpans → ScopeSpans → Span)
// or http/json, every span kept flat with its service name and the protocol it came in.

import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { onCleanup } from './_setup.ts';

export type AttrValue = string | number | boolean | null;

export interface ReceivedSpan {
  service: string;
  protocol: 'http/protobuf' | 'http/json';
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  /** OTLP SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  attributes: Record<string, AttrValue>;
  status: { code: number; message: string };
}

export interface OtlpReceiver {
  /** The base URL for OTEL_EXPORTER_OTLP_ENDPOINT. */
  url: string;
  spans: ReceivedSpan[];
  /** Request headers of each export (OTEL_EXPORTER_OTLP_HEADERS). */
  headers: http.IncomingHttpHeaders[];
  until(pred: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

// ---------------------------------------------------------------- protobuf wire format

interface Field { no: number; wire: number; value: bigint | Buffer }

function* fields(buf: Buffer): Generator<Field> {
  let i = 0;
  const varint = (): bigint => {
    let result = 0n, shift = 0n;
    for (;;) {
      const b = buf[i++]!;
      result |= BigInt(b & 0x7f) << shift;
      if (!(b & 0x80)) return result;
      shift += 7n;
    }
  };
  while (i < buf.length) {
    const key = Number(varint());
    const no = key >>> 3, wire = key & 7;
    if (wire === 0) yield { no, wire, value: varint() };
    else if (wire === 1) { yield { no, wire, value: buf.subarray(i, i + 8) }; i += 8; }
    else if (wire === 2) { const len = Number(varint()); yield { no, wire, value: buf.subarray(i, i + len) }; i += len; }
    else if (wire === 5) { yield { no, wire, value: buf.subarray(i, i + 4) }; i += 4; }
    else throw new Error(`unsupported wire type ${wire}`);
  }
}

function anyValue(buf: Buffer): AttrValue {
  for (const f of fields(buf)) {
    if (f.no === 1) return (f.value as Buffer).toString('utf8');
    if (f.no === 2) return (f.value as bigint) !== 0n;
    if (f.no === 3) return Number(BigInt.asIntN(64, f.value as bigint));
    if (f.no === 4) return (f.value as Buffer).readDoubleLE(0);
  }
  return null;
}

function keyValue(buf: Buffer): [string, AttrValue] {
  let key = '', value: AttrValue = null;
  for (const f of fields(buf)) {
    if (f.no === 1) key = (f.value as Buffer).toString('utf8');
    else if (f.no === 2) value = anyValue(f.value as Buffer);
  }
  return [key, value];
}

function decodeProtobuf(body: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of fields(body)) {
    if (rs.no !== 1) continue;
    let service = '';
    const spans: Buffer[] = [];
    for (const f of fields(rs.value as Buffer)) {
      if (f.no === 1) {
        for (const a of fields(f.value as Buffer)) if (a.no === 1) { const [k, v] = keyValue(a.value as Buffer); if (k === 'service.name') service = String(v); }
      } else if (f.no === 2) {
        for (const s of fields(f.value as Buffer)) if (s.no === 2) spans.push(s.value as Buffer);
      }
    }
    for (const s of spans) {
      const span: ReceivedSpan = { service, protocol: 'http/protobuf', traceId: '', spanId: '', parentSpanId: '', name: '', kind: 0, attributes: {}, status: { code: 0, message: '' } };
      for (const f of fields(s)) {
        if (f.no === 1) span.traceId = (f.value as Buffer).toString('hex');
        else if (f.no === 2) span.spanId = (f.value as Buffer).toString('hex');
        else if (f.no === 4) span.parentSpanId = (f.value as Buffer).toString('hex');
        else if (f.no === 5) span.name = (f.value as Buffer).toString('utf8');
        else if (f.no === 6) span.kind = Number(f.value);
        else if (f.no === 9) { const [k, v] = keyValue(f.value as Buffer); span.attributes[k] = v; }
        else if (f.no === 15) {
          for (const st of fields(f.value as Buffer)) {
            if (st.no === 2) span.status.message = (st.value as Buffer).toString('utf8');
            else if (st.no === 3) span.status.code = Number(st.value);
          }
        }
      }
      out.push(span);
    }
  }
  return out;
}

// ---------------------------------------------------------------- JSON

function jsonValue(v: any): AttrValue {
  if (!v) return null;
  if ('stringValue' in v) return v.stringValue;
  if ('boolValue' in v) return v.boolValue;
  if ('intValue' in v) return Number(v.intValue);
  if ('doubleValue' in v) return v.doubleValue;
  return null;
}

function decodeJson(body: any): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const rs of body.resourceSpans ?? []) {
    const service = String(jsonValue((rs.resource?.attributes ?? []).find((a: any) => a.key === 'service.name')?.value) ?? '');
    for (const ss of rs.scopeSpans ?? []) {
      for (const s of ss.spans ?? []) {
        out.push({
          service, protocol: 'http/json', traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', name: s.name, kind: s.kind,
          attributes: Object.fromEntries((s.attributes ?? []).map((a: any) => [a.key, jsonValue(a.value)])),
          status: { code: s.status?.code ?? 0, message: s.status?.message ?? '' },
        });
      }
    }
  }
  return out;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const headers: http.IncomingHttpHeaders[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST' || req.url !== '/v1/traces') {
        res.writeHead(404).end();
        return;
      }
      headers.push(req.headers);
      const body = Buffer.concat(chunks);
      try {
        const type = req.headers['content-type'] ?? '';
        if (type.startsWith('application/x-protobuf')) {
          spans.push(...decodeProtobuf(body));
          res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
        } else {
          spans.push(...decodeJson(JSON.parse(body.toString('utf8'))));
          res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        }
      } catch (e) {
        res.writeHead(400).end(String(e));
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () => new Promise<void>((r) => { server.close(() => r()); server.closeAllConnections(); });
  onCleanup(close);
  return {
    url, spans, headers, close,
    async until(pred, timeoutMs = 20_000) {
      const end = Date.now() + timeoutMs;
      while (!pred(spans)) {
        if (Date.now() > end) throw new Error(`OTLP receiver: condition not met; got ${JSON.stringify(spans.map((s) => [s.service, s.name, s.traceId.slice(0, 8)]))}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
  };
}
