// A postgres.js pool seen from outside: its queries in flight (kiln_db_pool_connections) and, with
// tracing on, one database span per query run inside a request or a job. postgres.js has no
// official instrumentation, so the pool is wrapped: each tagged-template query (every typed
// wrapper of src/db/sql/ is one) is timed from the moment it is sent to its answer. The span names
// the SQL function it calls (`kiln.start_generation`) or its first keyword, never its text or
// parameters. With neither metrics nor tracing on, the pool is returned untouched.

import type { Sql } from '../db/pool.ts';
import { metricsOn, registerPool } from './metrics.ts';
import { failSpan, SpanKind, startSpan, tracingOn, context, trace } from './tracing.ts';

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

/** Wraps `sql` (and the transactions it begins) so each query is counted and, inside a span, traced. */
export function observePool(name: string, sql: Sql): Sql {
  const max = Number((sql as unknown as { options?: { max?: number } }).options?.max ?? 10);
  let inFlight = 0;
  registerPool(name, () => ({ max, busy: Math.min(inFlight, max), waiting: Math.max(0, inFlight - max) }));
  if (!metricsOn() && !tracingOn()) return sql;

  const watch = (q: any, strings: TemplateStringsArray, counted: boolean) => {
    const handle = q.handle;
    let started = false;
    q.handle = function (this: unknown) {
      if (!started) {
        started = true;
        if (counted) inFlight++;
        let span: ReturnType<typeof startSpan>;
        // Only under a span that records: an unsampled request's queries cost no span at all.
        if (tracingOn() && trace.getSpan(context.active())?.isRecording()) {
          const info = queryInfo(strings);
          span = startSpan(info.name, { kind: SpanKind.CLIENT, attributes: info.attributes });
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

  const wrap = (target: any, counted: boolean): any => new Proxy(target, {
    apply(fn, self, args) {
      const q: any = Reflect.apply(fn, self, args);
      const strings = args[0];
      return strings && Array.isArray(strings.raw) && typeof q?.handle === 'function' ? watch(q, strings, counted) : q;
    },
    get(obj, prop, receiver) {
      const v = Reflect.get(obj, prop, receiver);
      if (prop === 'begin' && typeof v === 'function') {
        // A transaction holds a connection for its length; its queries are traced, not counted again.
        return (...args: any[]) => {
          const i = args.findIndex((a) => typeof a === 'function');
          if (i >= 0) {
            const cb = args[i];
            args[i] = (tx: any) => cb(wrap(tx, false));
          }
          inFlight++;
          const p = v.apply(obj, args);
          const done = () => { inFlight--; };
          Promise.resolve(p).then(done, done);
          return p;
        };
      }
      return v;
    },
  });
  return wrap(sql, true) as Sql;
}
