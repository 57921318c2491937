// graphile-worker runs on a pg pool Kiln owns (src/db/pg-pool.ts): a connection the server ends
// is an error handled, not an uncaught 'error' event, and a stopped worker has closed every
// connection before stop() returns — `kiln serve` stops the embedded cluster right after it.

import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ownedPgPool } from '../src/db/pg-pool.ts';
import net from 'node:net';
import { createContext } from '../src/context.ts';
import { startWorker } from '../src/worker/worker.ts';
import { onCleanup, startServer, testConfig } from './_setup.ts';

test('an idle connection the server terminates is reported to onError, once; the pool goes on; close() ends it', async () => {
  const srv = await startServer();
  const errors: string[] = [];
  const owned = ownedPgPool(srv.db.url, { max: 2, name: 'kiln-pool-test', onError: (e) => errors.push(e.message) });
  onCleanup(() => owned.close());
  const clients = await Promise.all([owned.pool.connect(), owned.pool.connect()]);
  for (const c of clients) c.release(); // both idle in the pool
  const [{ n }] = await srv.db.sql`
    select count(pg_terminate_backend(pid))::int as n from pg_stat_activity where application_name = 'kiln-pool-test'`;
  assert.equal(n, 2);
  for (let i = 0; i < 50 && errors.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(errors.length, 2, 'each terminated idle connection reached onError');
  assert.match(errors[0]!, /terminating connection/);
  // The pool opens new connections after losing its idle ones, and close() waits for them.
  const { rows } = await owned.pool.query('select 1 as one');
  assert.equal(rows[0].one, 1);
  await owned.close();
  assert.equal(owned.pool.totalCount, 0);
});

/** A FATAL ErrorResponse, as a server that is shutting down sends it (SQLSTATE 57P01). */
function adminShutdown(): Buffer {
  const field = (code: string, value: string) => Buffer.concat([Buffer.from(code), Buffer.from(value), Buffer.from([0])]);
  const body = Buffer.concat([field('S', 'FATAL'), field('V', 'FATAL'), field('C', '57P01'),
    field('M', 'terminating connection due to administrator command'), Buffer.from([0])]);
  const head = Buffer.alloc(5);
  head.write('E', 0);
  head.writeInt32BE(body.length + 4, 1);
  return Buffer.concat([head, body]);
}

test("the server going away while a stopped worker's connections close is handled, and stop() waits for them", async () => {
  const srv = await startServer();
  // Every connection of the worker goes through this proxy. To graphile-worker's (application
  // name kiln-worker in the startup packet) it answers the Terminate a closing connection sends
  // with the FATAL error of a server shutting down — what `kiln serve` met when it stopped the
  // embedded cluster right after the worker. graphile-worker's own pool removed its error
  // listeners before ending, so that error was an uncaught 'error' event and the process exited 1.
  const pgUrl = new URL(srv.db.url);
  const open = new Set<net.Socket>();
  let answered = 0;
  const TERMINATE = Buffer.from([0x58, 0, 0, 0, 4]);
  const proxy = net.createServer((client) => {
    const upstream = net.connect(Number(pgUrl.port), pgUrl.hostname);
    let pooled: boolean | null = null;
    const done = () => { open.delete(client); client.destroy(); upstream.destroy(); };
    client.on('data', (chunk: Buffer) => {
      if (pooled === null) {
        pooled = chunk.includes(Buffer.from('application_name\0kiln-worker\0'));
        if (pooled) open.add(client);
      }
      if (pooled && chunk.subarray(-5).equals(TERMINATE)) {
        answered++;
        client.write(adminShutdown());
      }
      upstream.write(chunk);
    });
    upstream.pipe(client);
    client.on('end', () => upstream.end());
    client.on('close', done).on('error', done);
    upstream.on('close', done).on('error', () => {});
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', () => r()));
  onCleanup(() => new Promise((r) => proxy.close(() => r(undefined))));
  const viaProxy = new URL(srv.db.url);
  viaProxy.port = String((proxy.address() as net.AddressInfo).port);
  const shutdown = new AbortController();
  const ctx = createContext(testConfig({ ...srv.ctx.config }), srv.db.app, shutdown.signal);
  const worker = await startWorker(ctx, viaProxy.toString());
  onCleanup(() => worker.stop());
  for (let i = 0; i < 100 && open.size < 2; i++) await new Promise((r) => setTimeout(r, 20));
  assert.ok(open.size > 1, `${open.size} graphile-worker connections (application_name kiln-worker) through the proxy`);
  shutdown.abort();
  await worker.stop();
  assert.ok(answered > 1, `${answered} closing connections met the shutdown error`);
  assert.equal(open.size, 0, 'no connection still open when stop() returned');
  // This process is still here: the error reached a listener (an uncaught one ends the test run).
});
