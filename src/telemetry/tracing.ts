// OpenTelemetry traces, configured only by the standard OTEL_* variables. Without an OTLP endpoint
// (or with OTEL_SDK_DISABLED=true) the SDK and exporters are never loaded: every helper here
// checks one flag and runs its function bare. With one, a NodeTracerProvider (W3C trace context)
// exports batches over OTLP/HTTP, protobuf or JSON.
//
// No context manager is registered: a span's parent is always passed explicitly (the request's
// or job's span travels on its Context, telemetry/scope.ts), never looked up in
// AsyncLocalStorage, whose promise hooks on Node 20 cost every request, sampled or not, more than
// its spans do (BENCH.md).

import { propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context as OtelContext, type Span } from '@opentelemetry/api';

let on = false;
let shutdownFn: (() => Promise<void>) | null = null;

export { SpanKind };

/** Whether spans are recorded in this process. */
export function tracingOn(): boolean {
  return on;
}

const truthy = (v: string | undefined) => /^(1|true|yes|on)$/i.test(v ?? '');

/** Whether the OTEL_* environment asks for traces: an endpoint, and the SDK not disabled. */
export function tracingWanted(env: NodeJS.ProcessEnv = process.env): boolean {
  if (truthy(env.OTEL_SDK_DISABLED)) return false;
  if (env.OTEL_TRACES_EXPORTER && env.OTEL_TRACES_EXPORTER !== 'otlp') return false;
  return Boolean(env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT);
}

/**
 * Starts tracing when the environment asks for it (see tracingWanted). The exporter reads its
 * endpoint, headers and timeout from OTEL_EXPORTER_OTLP_*; OTEL_EXPORTER_OTLP_(TRACES_)PROTOCOL
 * picks http/protobuf (default) or http/json; the sampler comes from OTEL_TRACES_SAMPLER(_ARG),
 * the service name from OTEL_SERVICE_NAME (default kiln) and OTEL_RESOURCE_ATTRIBUTES.
 */
export async function startTracing(defaultServiceName = 'kiln'): Promise<boolean> {
  if (on || !tracingWanted()) return on;
  const protocol = process.env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL || process.env.OTEL_EXPORTER_OTLP_PROTOCOL || 'http/protobuf';
  if (protocol !== 'http/protobuf' && protocol !== 'http/json') {
    throw new Error(`OTEL_EXPORTER_OTLP_PROTOCOL must be http/protobuf or http/json (Kiln ships no gRPC exporter), got ${JSON.stringify(protocol)}`);
  }
  const [{ NodeTracerProvider }, { BatchSpanProcessor }, resources, exporterModule] = await Promise.all([
    import('@opentelemetry/sdk-trace-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
    protocol === 'http/json' ? import('@opentelemetry/exporter-trace-otlp-http') : import('@opentelemetry/exporter-trace-otlp-proto'),
  ]);
  const detected = resources.detectResources({ detectors: [resources.envDetector] });
  const resource = resources.defaultResource()
    .merge(resources.resourceFromAttributes({ 'service.name': defaultServiceName }))
    .merge(detected);
  const provider = new NodeTracerProvider({
    resource,
    spanProcessors: [new BatchSpanProcessor(new exporterModule.OTLPTraceExporter())],
  });
  // contextManager null: none (see above); the W3C trace-context propagator is registered.
  provider.register({ contextManager: null });
  on = true;
  shutdownFn = () => provider.shutdown();
  return true;
}

/** Flushes and stops the exporter (at process shutdown). */
export async function stopTracing(): Promise<void> {
  const fn = shutdownFn;
  shutdownFn = null;
  await fn?.().catch(() => {});
}

let cachedTracer: ReturnType<typeof trace.getTracer> | undefined;
/** Kiln's tracer, looked up once (the API's lookup builds a key string each call). */
function tracer() {
  return (cachedTracer ??= trace.getTracer('kiln'));
}

export interface SpanOptions {
  kind?: SpanKind;
  attributes?: Attributes;
  /**
   * The parent: a span of this process (a Context's `span`), or a remote context (contextFrom,
   * contextFromHeaders). None: a new trace.
   */
  parent?: Span | OtelContext;
  startTime?: number;
}

function parentContext(parent: Span | OtelContext | undefined): OtelContext {
  if (parent === undefined) return ROOT_CONTEXT;
  return typeof (parent as Span).spanContext === 'function' ? trace.setSpan(ROOT_CONTEXT, parent as Span) : (parent as OtelContext);
}

/**
 * Runs `fn` with a new span that ends when `fn` settles; a throw sets the span's status to error
 * with the error's type (its class or code), never its message. With tracing off, `fn` runs bare
 * with no span. The span is `fn`'s to pass on (telemetry/scope.ts underSpan), as the parent of
 * what it does.
 */
export async function withSpan<T>(name: string, opts: SpanOptions, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!on) return fn(undefined);
  const span = tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, startTime: opts.startTime }, parentContext(opts.parent));
  try {
    return await fn(span);
  } catch (e) {
    failSpan(span, e);
    throw e;
  } finally {
    span.end();
  }
}

/** A span started now and ended by the caller (for work that does not fit one function). */
export function startSpan(name: string, opts: SpanOptions = {}): Span | undefined {
  if (!on) return undefined;
  return tracer().startSpan(name, { kind: opts.kind ?? SpanKind.INTERNAL, attributes: opts.attributes, startTime: opts.startTime }, parentContext(opts.parent));
}

/** The type of an error, safe for a span: a code such as KQ001 or timeout, else its class name. */
export function errorType(e: unknown): string {
  const err = e as { code?: unknown; name?: unknown } | null;
  if (typeof err?.code === 'string' && /^[A-Za-z0-9_.-]{1,64}$/.test(err.code)) return err.code;
  if (typeof err?.name === 'string' && /^[A-Za-z0-9_.]{1,64}$/.test(err.name)) return err.name;
  return '_OTHER';
}

export function failSpan(span: Span | undefined, e: unknown, type = errorType(e)): void {
  if (!span) return;
  span.setAttribute('error.type', type);
  span.setStatus({ code: SpanStatusCode.ERROR, message: type });
}

/** A span's context as a W3C traceparent (to store with a job), or undefined. */
export function traceparentOf(span: Span | undefined): string | undefined {
  if (!on || !span) return undefined;
  const sc = span.spanContext();
  // Formatted as the W3C propagator would (version 00, the sampled flag): no carrier object.
  return sc && trace.isSpanContextValid(sc) ? `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}` : undefined;
}

const TRACEPARENT_RE = /^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$/;

/** The context a stored traceparent names (a job's parent), or the root context. */
export function contextFrom(traceparent: unknown): OtelContext {
  if (!on || typeof traceparent !== 'string' || !TRACEPARENT_RE.test(traceparent)) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, { traceparent });
}

const HEADERS_GETTER = {
  get: (h: Headers, key: string) => h.get(key) ?? undefined,
  keys: (h: Headers) => [...h.keys()],
};

/**
 * The context of an incoming request's traceparent/tracestate headers; the root context when it
 * has no traceparent (then there is nothing to continue: Kiln reads no baggage).
 */
export function contextFromHeaders(headers: Headers): OtelContext {
  if (!headers.has('traceparent')) return ROOT_CONTEXT;
  return propagation.extract(ROOT_CONTEXT, headers, HEADERS_GETTER);
}

export { trace };
