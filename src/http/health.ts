// GET /healthz and GET /readyz: liveness and readiness for load balancers, orchestrators and
// docker-compose healthchecks. Outside /api/v1, no key, never cached.
// - /healthz: the process serves HTTP (nothing else is asked).
// - /readyz: this API process should get traffic: not shutting down, the database answers, and it
//   holds at least the migrations this build ships (a process of a newer build waits for
//   `kiln migrate`; an older one beside a newer schema stays ready, as migrations are additive).
//   `warnings` names what is ready but unsafe: the service connected as a superuser or the owner
//   (docs/operators.md, "Database roles"). With a bucket configured, `store` says whether it
//   answers: a store that is down leaves the process ready, degraded (docs/storage.md, "When the
//   store is down").

import type { H3 } from 'h3';
import type { Context } from '../context.ts';
import { committedMigrationCount } from '../db/committed.ts';
import { privilegeWarning } from '../db/roles.ts';
import { readiness } from '../db/sql/count_migrations.ts';
import { withTimeout } from '../db/timeout.ts';
import { errors } from '../errors.ts';
import { errorFields } from '../log.ts';
import { checkStore } from '../storage/store.ts';
import { json } from './json.ts';

/** One database check per process per this long, whatever the probe rate: probes share it. */
const CHECK_EVERY_MS = 1000;
const CHECK_TIMEOUT_MS = 2000;

type StoreReadiness = { backend: 's3'; status: 'ok' } | { backend: 's3'; status: 'degraded'; since: string; message: string };
type Readiness = { ready: true; applied: number; warnings: string[]; store: StoreReadiness | null } | { ready: false; reason: string };

/** The bucket's status for /readyz (null without a bucket): never a reason to be unready. */
async function storeReadiness(ctx: Context): Promise<StoreReadiness | null> {
  const s = await checkStore(ctx.config, CHECK_EVERY_MS).catch(() => null);
  if (!s) return null;
  if (s.up) return { backend: 's3', status: 'ok' };
  return {
    backend: 's3', status: 'degraded', since: s.since!.toISOString(),
    message: 'The image store does not answer: image generations keep their outputs and retry storing them; transforms and streamed files answer 503.',
  };
}

const NO_STORE = { 'cache-control': 'no-store' };

export function mountHealth(app: H3, ctx: Context): void {
  const expected = committedMigrationCount();
  let last: { at: number; result: Promise<Readiness> } | null = null;

  const probe = async (): Promise<Readiness> => {
    // Asked beside the database, so a store that is slow to answer adds no time.
    const store = storeReadiness(ctx);
    try {
      const [row] = await withTimeout(readiness(ctx.sql), CHECK_TIMEOUT_MS);
      const applied = row?.n ?? 0;
      if (applied < expected) {
        return { ready: false, reason: `The database holds ${applied} of this build's ${expected} migrations: run kiln migrate.` };
      }
      const role = { name: row!.name, superuser: row!.superuser, owner: row!.owner === true, migrated: row!.owner !== null };
      const warning = privilegeWarning(role, !ctx.config.databaseUrl);
      return { ready: true, applied, warnings: warning ? [warning] : [], store: await store };
    } catch (e) {
      // Unreachable, or no pool connection and answer within the timeout: the cause goes to the
      // log, never to the unauthenticated caller.
      ctx.log.warn('readiness check failed', errorFields(e));
      return { ready: false, reason: `The database did not answer within ${CHECK_TIMEOUT_MS / 1000} s.` };
    }
  };
  const check = (): Promise<Readiness> => {
    const now = Date.now();
    if (!last || now - last.at >= CHECK_EVERY_MS) last = { at: now, result: probe() };
    return last.result;
  };

  app.get('/healthz', () => json({ status: 'ok' }, 200, NO_STORE));
  app.get('/readyz', async () => {
    if (ctx.shutdown.aborted) throw errors.unavailable('Shutting down.');
    const r = await check();
    if (!r.ready) throw errors.unavailable(r.reason);
    return json({
      status: 'ready', migrations: { applied: r.applied, expected },
      ...(r.warnings.length ? { warnings: r.warnings } : {}),
      ...(r.store ? { store: r.store } : {}),
    }, 200, NO_STORE);
  });
}
