// The postgres.js pool every process shares, and typed array parameters for it.

import postgres from 'postgres';
import { sendUnpreparedInOneTrip } from './one-trip.ts';
import { rootOf } from '../root.ts';

export type Sql = postgres.Sql<{}>;

/** What a typed SQL wrapper (db/sql/) runs on: the pool or a transaction. */
export type Queryable = postgres.ISql<{}>;

export interface ConnectOptions {
  max?: number;
  appName?: string;
  /**
   * false behind PgBouncer in transaction mode: each transaction may run on another server
   * connection, where a named prepared statement does not exist (PgBouncer 1.18 does not carry
   * them). Statements then go out unnamed (the extended protocol, still parameterised), in one
   * round trip where postgres.js would take two (./one-trip.ts).
   */
  prepare?: boolean;
  /** Seconds to wait for a connection (a replica that is down must not hold a read for long). */
  connectTimeout?: number;
}

export function connect(url: string, opts: ConnectOptions = {}): Sql {
  const sql: Sql = postgres(url, {
    max: opts.max ?? 10,
    prepare: opts.prepare ?? true,
    connect_timeout: opts.connectTimeout ?? 30,
    // Money is bigint; keep it exact as a JS bigint-safe string → number where safe at the edges.
    types: {},
    onnotice: () => {},
    connection: { application_name: opts.appName ?? 'kiln' },
    idle_timeout: 60,
  });
  // Unnamed statements in one round trip instead of two (./one-trip.ts).
  if (opts.prepare === false) sendUnpreparedInOneTrip(sql);
  return sql;
}

/** Array type OIDs for `pgArray`. */
export const ARRAY_OID = { bool: 1000, bytea: 1001, int4: 1007, int8: 1016, text: 1009, uuid: 2951 } as const;

function arrayElement(v: string | number | boolean | Uint8Array | null): string {
  if (v === null) return 'NULL';
  if (typeof v === 'boolean') return v ? 't' : 'f';
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new TypeError('array element is not a finite number');
    return String(v);
  }
  if (v instanceof Uint8Array) return `"\\\\x${Buffer.from(v).toString('hex')}"`;
  return `"${v.replace(/[\\"]/g, (c) => `\\${c}`)}"`;
}

/**
 * An array parameter with an explicit array type, serialised here. postgres.js's `sql.array`
 * picks the array OID from types it fetches on first connect, so a query built before that
 * (the first burst of a new process) would send the element type instead and fail.
 */
export function pgArray(sql: Queryable, values: Array<string | number | boolean | Uint8Array | null>, oid: number) {
  return sql.typed(`{${values.map(arrayElement).join(',')}}` as any, oid);
}

/**
 * postgres.js learns array type OIDs with its first query; a `sql.array` parameter serialised
 * before that goes out with the element type. One query per pool settles it.
 */
const typesReady = new WeakMap<Sql, Promise<unknown>>();
export function arrayTypesReady(of: Sql): Promise<unknown> {
  const sql = rootOf(of);
  let p = typesReady.get(sql);
  if (!p) {
    p = sql`select 1`.then(() => undefined);
    p.catch(() => typesReady.delete(sql));
    typesReady.set(sql, p);
  }
  return p;
}
