// pgArray: array parameters serialised with their array type, correct for any element and
// usable on a pool that has not fetched types yet.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ARRAY_OID, connect, pgArray } from '../src/db/pool.ts';
import { createTestDb, onCleanup } from './_setup.ts';

test('round-trips awkward elements on a never-connected pool', async () => {
  const db = await createTestDb();
  const sql = connect(db.url, { max: 1 });
  onCleanup(() => sql.end({ timeout: 5 }));
  const texts = ['plain', 'with "quotes"', 'back\\slash', 'comma,brace}{', '', 'NULL', null, 'ünïcødé'];
  const bytes = [Buffer.from([0, 1, 255]), Buffer.alloc(0), null];
  const [r] = await sql`select ${pgArray(sql, texts, ARRAY_OID.text)} as t, ${pgArray(sql, bytes, ARRAY_OID.bytea)} as b,
                               ${pgArray(sql, [1, -2, null], ARRAY_OID.int4)} as i, ${pgArray(sql, [true, false, null], ARRAY_OID.bool)} as o,
                               ${pgArray(sql, ['00000000-0000-0000-0000-000000000001'], ARRAY_OID.uuid)} as u`;
  // Compared in SQL: postgres.js itself reads a NULL inside text[] back as 'NULL'.
  const [eq] = await sql`select ${pgArray(sql, texts, ARRAY_OID.text)} is not distinct from
    array['plain', 'with "quotes"', 'back\\slash', 'comma,brace}{', '', 'NULL', null, 'ünïcødé']::text[] as same,
    (${pgArray(sql, texts, ARRAY_OID.text)})[7] is null as real_null`;
  assert.deepEqual(eq, { same: true, real_null: true });
  assert.deepEqual(r.t.slice(0, 6), texts.slice(0, 6));
  assert.deepEqual(r.b.slice(0, 2).map((x: Buffer) => [...x]), [[0, 1, 255], []]);
  const [bn] = await sql`select (${pgArray(sql, bytes, ARRAY_OID.bytea)})[3] is null as n, (${pgArray(sql, [1, -2, null], ARRAY_OID.int4)})[3] is null as i,
                               (${pgArray(sql, [true, false, null], ARRAY_OID.bool)})[3] is null as o`;
  assert.deepEqual(bn, { n: true, i: true, o: true });
  assert.deepEqual(r.i.slice(0, 2), [1, -2]);
  assert.deepEqual(r.o.slice(0, 2), [true, false]);
  assert.deepEqual(r.u, ['00000000-0000-0000-0000-000000000001']);
});
