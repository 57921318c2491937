// The pooled client (prepare: false, for PgBouncer in transaction mode) sends a parameterised query
// in one round trip once its statement's parameter types are known (src/db/one-trip.ts): one
// socket write per query where postgres.js alone makes two (Parse + Describe, a wait, then Bind +
// Execute). Every kind of parameter Kiln sends reads back as the prepared (direct) client reads
// it, serialised by the types the server described (a string bound to json is JSON-encoded).

import assert from 'node:assert/strict';
import net from 'node:net';
import { before, test } from 'node:test';
import postgres from 'postgres';
import { ARRAY_OID, connect, pgArray } from '../src/db/pool.ts';
import { sendUnpreparedInOneTrip } from '../src/db/one-trip.ts';
import { createTestDb, onCleanup, type TestDb } from './_setup.ts';

let db: TestDb;
before(async () => {
  db = await createTestDb();
});

/** A prepare: false client whose socket counts its writes. */
function countingClient(oneTrip: boolean) {
  const u = new URL(db.url);
  const counter = { writes: 0 };
  const sql = postgres(db.url, {
    max: 1,
    prepare: false,
    onnotice: () => {},
    // postgres.js takes a socket factory (its types leave the option out).
    ...({ socket: () => new Promise<net.Socket>((resolve, reject) => {
      const s = net.connect(Number(u.port), u.hostname);
      const write = s.write.bind(s) as (...a: unknown[]) => boolean;
      (s as any).write = (...a: unknown[]) => {
        counter.writes++;
        return write(...a);
      };
      s.once('connect', () => resolve(s));
      s.once('error', reject);
    }) } as {}),
  });
  if (oneTrip) sendUnpreparedInOneTrip(sql);
  onCleanup(() => sql.end({ timeout: 1 }));
  return { sql, counter };
}

async function writesPerQuery(sql: postgres.Sql<{}>, counter: { writes: number }, run: () => Promise<unknown>) {
  await sql`select 1`; // connected, types fetched
  await run(); // the statement's first run describes its parameters
  const before = counter.writes;
  for (let i = 0; i < 20; i++) await run();
  return (counter.writes - before) / 20;
}

test('a parameterised query goes out in one write with one-trip on, two without (postgres.js alone)', async () => {
  const id = '0b7b6a1e-54a4-4d0c-9c1e-2f7d3c7a9b11';
  // Without it, first: the prototype is shared, and this shows what postgres.js does by itself.
  const plain = countingClient(false);
  const q = (sql: postgres.Sql<{}>) => () => sql`select ${id}::uuid as id, ${42}::int as n, ${'x'} as s`;
  const plainWrites = await writesPerQuery(plain.sql, plain.counter, q(plain.sql));
  const one = countingClient(true);
  const oneWrites = await writesPerQuery(one.sql, one.counter, q(one.sql));
  assert.equal(plainWrites, 2, 'postgres.js with prepare: false: Parse + Describe, then Bind + Execute');
  assert.equal(oneWrites, 1, 'one trip: Parse, Describe, Bind, Execute and Sync together');
  // A statement's first run describes first (two writes): its types are not known yet.
  const before = one.counter.writes;
  await one.sql`select ${'fresh'} as first_run, ${5}::int as n`;
  assert.equal(one.counter.writes - before, 2);
  // A bare JS array, whose type the server names: one trip once known, and right.
  const arrayWrites = await writesPerQuery(one.sql, one.counter, () => one.sql`select ${one.sql.array([1, 2, 3])}::int[] as a`);
  assert.equal(arrayWrites, 1);
  const [{ a }] = await one.sql`select ${one.sql.array([1, 2, 3])}::int[] as a`;
  assert.deepEqual(a, [1, 2, 3]);
});

test('every kind of parameter reads back as the prepared client reads it', async () => {
  const pooled = connect(db.url, { max: 2, prepare: false });
  const direct = connect(db.url, { max: 2 });
  onCleanup(() => pooled.end({ timeout: 1 }));
  onCleanup(() => direct.end({ timeout: 1 }));
  const when = new Date('2026-11-27T03:04:05.678Z');
  const bytes = Buffer.from([0, 1, 2, 254, 255]);
  const run = (sql: any) => sql`select
      ${'0b7b6a1e-54a4-4d0c-9c1e-2f7d3c7a9b11'}::uuid as uuid, ${7}::int as int, ${2.5}::float8 as float,
      ${'9007199254740993'}::bigint::text as big, ${12345678901234n}::bigint::text as bigint,
      ${true} as yes, ${false}::boolean as no, ${null}::text as nothing, ${'ünïcødé "quoted" \\ back'} as text,
      ${when} as at, ${bytes} as bytes, ${sql.json({ a: [1, { b: 'c' }], n: null })}::jsonb as doc,
      ${pgArray(sql, ['a', 'b"c', null], ARRAY_OID.text)}::text[] is not distinct from array['a', 'b"c', null] as texts,
      ${pgArray(sql, [bytes, Buffer.from('x')], ARRAY_OID.bytea)} as bytea_list,
      ${pgArray(sql, [1, 2, 3], ARRAY_OID.int4)} as ints,
      ${'{"k": 1}'}::json as json_text,
      ${3} + ${4}::int as sum`;
  await run(pooled); // the first run describes; the second goes in one trip with the learned types
  const [p] = await run(pooled);
  const [d] = await run(direct);
  assert.deepEqual(p, d);
  assert.equal(p!.json_text, '{"k": 1}', 'a string bound to json is JSON-encoded, as the prepared client does');
  assert.equal(p!.uuid, '0b7b6a1e-54a4-4d0c-9c1e-2f7d3c7a9b11');
  assert.equal(p!.big, '9007199254740993');
  assert.equal((p!.at as Date).toISOString(), when.toISOString());
  assert.deepEqual(Buffer.from(p!.bytes as Buffer), bytes);
  assert.deepEqual(p!.doc, { a: [1, { b: 'c' }], n: null });
  assert.equal(p!.texts, true);
  assert.equal(p!.sum, 7);
  // An error answers as an error, and the connection goes on.
  await assert.rejects(pooled`select ${'not a uuid'}::uuid`, (e: any) => e.code === '22P02');
  const [{ ok }] = await pooled`select ${1}::int = 1 as ok`;
  assert.equal(ok, true);
  // Many at once pipeline on the pooled client and all answer right.
  const got = await Promise.all(Array.from({ length: 200 }, (_, i) => pooled`select ${i}::int * 2 as v`.then(([r]) => r!.v)));
  assert.deepEqual(got, Array.from({ length: 200 }, (_, i) => i * 2));
  // Inside a transaction too.
  const inTx = await pooled.begin(async (tx) => {
    const [{ v }] = await tx`select ${'a'} || ${'b'} as v`;
    return v;
  });
  assert.equal(inTx, 'ab');
});
