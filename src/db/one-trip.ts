// Queries without prepared statements in one round trip.
//
// Behind PgBouncer in transaction mode the pooled client runs with `prepare: false` (PgBouncer 1.18
// carries no named statements). postgres.js then sends every query that has parameters in two
// round trips: Parse + Describe, a wait for the parameter types, then Bind + Execute, holding the
// connection's pipeline meanwhile (`describeFirst`). It needs the types to serialise parameters
// as the server will read them (a string bound to a jsonb parameter is JSON-encoded, for one).
// A prepared client learns them once per statement; this module does the same for unnamed ones:
// the first run of a statement text (with the same inferred parameter types) describes first as
// before, and the types the server described are kept, in the process, for that text. Every later
// run fills them in and takes postgres.js's own one-trip path for unnamed statements (Parse with
// the types, Describe, Bind, Execute, Sync in one write), serialising exactly as a prepared run
// would. Prepared (direct) pools are untouched.
//
// postgres.js decides per query with `q.describeFirst`, set as it builds the query, and reads it
// right before it serialises the query. The property is made an accessor on its Query prototype
// (shared by every instance of the library) that answers false, with the types filled in, when
// the statement's types are known. test/db.one-trip.test.ts counts the socket writes per query
// and checks every kind of parameter against a prepared client.
//
// UPGRADING postgres.js (written against 3.4.9): this leans on its internals, none of them public
// API. Re-read src/query.js and src/connection.js of the new version for each of these:
//   - `sql\`…\`` returns an instance of its Query class (a Promise subclass, run only when awaited),
//     and every client of the one loaded module shares that class's prototype.
//   - connection.js build(q) ASSIGNS `q.describeFirst` (so the setter above sees postgres.js's own
//     decision) after it set `q.prepare` (false on a `prepare: false` client), `q.string` (the
//     statement text) and `q.onlyDescribe` (sql.describe()), and sets `q.statement` to
//     `{ string, types, name: '' }` with `types` a fresh array per query, before anything READS
//     `q.describeFirst` (toBuffer, execute's pipelining test, the Sync after a Describe).
//   - toBuffer sends `unnamed(q)` — Parse carrying `statement.types`, Describe, Bind, Execute in
//     one write — when describeFirst is false and prepare is false; Bind serialises each
//     parameter by `statement.types[i]`.
//   - ParameterDescription writes the server's types INTO that same `statement.types` array
//     (only where it holds 0), then sets `query.describeFirst = false` (the setter above).
// What catches a break: test/db.one-trip.test.ts (one write per query with this module, two
// without; every kind of parameter reads back as a prepared client reads it) and, where
// PgBouncer is installed, test/scale.pgbouncer.test.ts (the pooled client end to end). The
// other reliances on postgres.js internals: telemetry/pool.ts (see its head) and the `onnotify`
// option of the worker's lease connection (worker/worker.ts, test/generations.cancel.test.ts).

import type { Sql } from 'postgres';

interface BuiltQuery {
  prepare?: boolean;
  onlyDescribe?: boolean;
  string?: string;
  statement?: { types?: number[] };
}

/** Statement texts (with their inferred parameter types) → the parameter types the server described. */
const described = new Map<string, number[]>();
/** Distinct statements remembered, at most (Kiln's are a few hundred fixed texts). */
const MAX_STATEMENTS = 5000;

const installed = new WeakSet<object>();

/** Lets `sql`'s unprepared queries (and every other postgres.js client's) go in one round trip once their types are known. */
export function sendUnpreparedInOneTrip(sql: Sql): void {
  // A query object, never run (postgres.js runs a query when it is awaited), gives the prototype.
  const proto = Object.getPrototypeOf(sql`select 1`) as object;
  if (installed.has(proto)) return;
  installed.add(proto);
  const stored = new WeakMap<object, boolean>();
  const decided = new WeakMap<object, boolean>();
  Object.defineProperty(proto, 'describeFirst', {
    configurable: true,
    get(this: BuiltQuery) {
      const v = stored.get(this) ?? false;
      if (!v || this.prepare !== false || this.onlyDescribe) return v;
      const known = decided.get(this);
      if (known !== undefined) return known;
      const types = this.statement?.types;
      if (!types || typeof this.string !== 'string') return v;
      const key = `${types.join(',')}\0${this.string}`;
      const learned = described.get(key);
      if (learned && learned.length === types.length && !learned.includes(0)) {
        for (let i = 0; i < types.length; i++) types[i] = learned[i]!;
        decided.set(this, false);
        return false;
      }
      // Describe first, as postgres.js would; the server's answer fills this very array in.
      if ((!learned || learned.includes(0)) && (learned || described.size < MAX_STATEMENTS)) described.set(key, types);
      decided.set(this, true);
      return true;
    },
    set(this: BuiltQuery, v: unknown) {
      stored.set(this, Boolean(v));
      if (!v) decided.set(this, false);
    },
  });
}
