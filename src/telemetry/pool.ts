// A postgres.js pool seen from outside: its queries in flight (kiln_db_pool_connections) and, with
// tracing on, one database span per query run inside a traced request or job. postgres.js has no
// official instrumentation, so the pool is wrapped: each tagged-template query (every typed
// wrapper of src/db/sql/ is one) is timed from the moment it is sent to its answer. The span names
// the SQL function it calls (`kiln.start_generation`) or its first keyword, never its text or
// parameters. With neither metrics nor tracing on, the pool is returned untouched.
//
// A query's parent span is the one its pool is bound to (bindPool: a traced request's or job's
// copy of the pool), or, for a query a batcher sends for several requests, the span named by
// withQueryParent (db/query-parent.ts) while the query is built. Queries of the process's own
// pool outside those have no span: a query outside any request or job is not worth a trace of
// its own.
//
// UPGRADING postgres.js (written against 3.4.9): the Proxy leans on these, none of them public
// API. Re-read src/index.js and src/query.js of the new version for each:
//   - a client is a function: a tagged-template call (first argument an array with `raw`) returns
//     its Query; other calls (`sql(value)` helpers, `sql.unsafe`, `sql.file`) are let through
//     uncounted and untraced, as are the queries of `savepoint` inside a transaction.
//   - Query.prototype.handle() is the one door through which a query starts (then, catch,
//     finally, execute, forEach and cursors all call it, maybe many times): the wrapper replaces
//     it on the instance and counts the first call. A query started another way would be neither
//     counted nor traced.
//   - Query is a native Promise subclass: Promise.prototype.then.call(q, …) watches it settle
//     without calling its own then (which calls handle).
//   - `sql.begin([options,] fn)` calls fn with a transaction client that is itself a tagged-
//     template function (it is wrapped the same way, uncounted) and returns a promise of the end.
//   - `sql.options.max` is the pool's size (10 when absent); the other properties are read
//     through the Proxy with it as the receiver.
// What catches a break: test/telemetry.traces.test.ts (database spans named after the SQL
// function, e.g. kiln.start_generations, under the request's or job's span; concurrent requests
// each with their own queries) and test/telemetry.metrics.test.ts (kiln_db_pool_connections'
// max). Nothing asserts the in-flight (busy, waiting) counts: after an upgrade, watch
// kiln_db_pool_connections under load by hand. db/one-trip.ts lists the other internals Kiln uses.

import type { Span } from '@opentelemetry/api';
import type { Sql } from '../db/pool.ts';
import { currentQueryParent } from '../db/query-parent.ts';
import { ROOT } from '../root.ts';
import { metricsOn, registerPool } from './metrics.ts';
import { failSpan, SpanKind, startSpan, tracingOn } from './tracing.ts';

interface QueryInfo {
  name: string;
  attributes: Record<string, string>;
}

const infos = new WeakMap<TemplateStringsArray, QueryInfo>();

function queryInfo(strings: TemplateStringsArray): QueryInfo {
  let info = infos.get(strings);
  if (!info) {
    const text = strings.join('$');
    const fn = /\b(kiln(?:_private)?\.[a-z_][a-z0-9_]*)\s*\(/i.exec(text)?.[1];
    const op = (/^\s*(?:with\b[\s\S]*?\)\s*)?([a-z]+)/i.exec(text)?.[1] ?? 'query').toUpperCase();
    const attributes: Record<string, string> = { 'db.system.name': 'postgresql', 'db.operation.name': op };
    if (fn) attributes['db.stored_procedure.name'] = fn;
    info = { name: fn ? `${op} ${fn}` : op, attributes };
    infos.set(strings, info);
  }
  return info;
}

const BIND = Symbol('kiln.bind_pool');

/**
 * A copy of an observed pool whose queries (and transactions) are traced under `span`; the same
 * pool (rootOf gives the process's) for everything else. A pool not observed is returned as is.
 */
export function bindPool(sql: Sql, span: Span): Sql {
  const bind = (sql as unknown as { [BIND]?: (span: Span) => Sql })[BIND];
  return bind ? bind(span) : sql;
}

/** Wraps `sql` (and the transactions it begins) so each query is counted and, under a span, traced. */
export function observePool(name: string, sql: Sql): Sql {
  const max = Number((sql as unknown as { options?: { max?: number } }).options?.max ?? 10);
  let inFlight = 0;
  registerPool(name, () => ({ max, busy: Math.min(inFlight, max), waiting: Math.max(0, inFlight - max) }));
  if (!metricsOn() && !tracingOn()) return sql;

  const watch = (q: any, strings: TemplateStringsArray, counted: boolean, parent: Span | undefined) => {
    const handle = q.handle;
    let started = false;
    q.handle = function (this: unknown) {
      if (!started) {
        started = true;
        if (counted) inFlight++;
        let span: ReturnType<typeof startSpan>;
        // Only under a span that records: an unsampled request's queries cost no span at all.
        if (parent?.isRecording()) {
          const info = queryInfo(strings);
          span = startSpan(info.name, { kind: SpanKind.CLIENT, attributes: info.attributes, parent });
        }
        // Promise's own then: postgres.js's would run the query again.
        Promise.prototype.then.call(q, () => {
          if (counted) inFlight--;
          span?.end();
        }, (e: unknown) => {
          if (counted) inFlight--;
          failSpan(span, e);
          span?.end();
        });
      }
      return handle.apply(this, arguments as any);
    };
    return q;
  };

  let root: any;
  // The proxy's handler is a class (methods shared, no closures per proxy): a traced request
  // binds a copy of the pool, so one is made per request.
  class Handler {
    constructor(
      private readonly target: any,
      private readonly counted: boolean,
      private readonly bound: Span | undefined,
    ) {}

    apply(fn: any, self: unknown, args: any[]): any {
      const q: any = Reflect.apply(fn, self, args);
      const strings = args[0];
      return strings && Array.isArray(strings.raw) && typeof q?.handle === 'function' ? watch(q, strings, this.counted, this.bound ?? currentQueryParent()) : q;
    }

    get(obj: any, prop: string | symbol, receiver: unknown): any {
      if (prop === ROOT) return this.bound === undefined ? undefined : root;
      if (prop === BIND) return this.counted && tracingOn() ? (span: Span) => wrap(this.target, true, span) : undefined;
      const v = Reflect.get(obj, prop, receiver);
      if (prop === 'begin' && typeof v === 'function') {
        // A transaction holds a connection for its length; its queries are traced, not counted again.
        const parent = this.bound ?? currentQueryParent();
        return (...args: any[]) => {
          const i = args.findIndex((a) => typeof a === 'function');
          if (i >= 0) {
            const cb = args[i];
            args[i] = (tx: any) => cb(wrap(tx, false, parent));
          }
          inFlight++;
          const p = v.apply(obj, args);
          const done = () => { inFlight--; };
          Promise.resolve(p).then(done, done);
          return p;
        };
      }
      return v;
    }
  }
  const wrap = (target: any, counted: boolean, bound: Span | undefined): any => new Proxy(target, new Handler(target, counted, bound));
  root = wrap(sql, true, undefined);
  return root as Sql;
}
