// The whole-path protocol tests (generations.{openai,anthropic,gemini}.test.ts) run their cases
// side by side against one peer: a case's prompt carries `[case:name]`, the peer answers each
// tagged request with that case's reply for the attempt, every case is submitted under its own
// account, and the ledger checks read the case's one charge.

import assert from 'node:assert/strict';
import type { PeerReply } from './_peer.ts';
import { api, createAccount, createKey, type TestServer } from './_setup.ts';
import { charges, waitFor } from './_generations.ts';

export interface Case {
  /** The POST /generations body but its prompt; `images` given as functions are made at submit time. */
  body: Record<string, unknown>;
  /** The reply to the case's nth request; undefined: the peer's own answer. */
  replies: (n: number) => PeerReply | undefined | Promise<PeerReply | undefined>;
  key?: string;
  id?: string;
  final?: Promise<any>;
}

/** The case a request belongs to: the `[case:name]` tag in its body. */
export function caseOf(body: unknown): string | undefined {
  return /\[case:([a-z0-9-]+)\]/.exec(JSON.stringify(body) ?? '')?.[1];
}

/** The reply for the named case's next request (counted per case); undefined for no case. */
export function caseReplies(cases: Record<string, Case>): (name: string | undefined) => ReturnType<Case['replies']> | undefined {
  const seen = new Map<string, number>();
  return (name) => {
    if (name === undefined || !Object.hasOwn(cases, name)) return undefined;
    const n = seen.get(name) ?? 0;
    seen.set(name, n + 1);
    return cases[name]!.replies(n);
  };
}

/** Submits every case under a new account's key; its `final` is the generation once `done` (default: ended). */
export async function submitCases<C extends Case>(srv: TestServer, cases: Record<string, C>, done?: (body: any, c: C) => boolean): Promise<void> {
  await Promise.all(
    Object.entries(cases).map(async ([name, c]) => {
      const a = await createAccount(srv.db.sql);
      c.key = (await createKey(srv.db.sql, a.id)).key;
      const images = (c.body.images as Array<() => unknown> | undefined)?.map((f) => f());
      const res = await api(srv.base, c.key, '/generations', { body: { prompt: `[case:${name}] make something`, ...c.body, ...(images ? { images } : {}) } });
      assert.equal(res.status, 202, `${name}: ${JSON.stringify(res.body)}`);
      c.id = res.body.id;
      c.final = waitFor(srv, c.key, c.id!, { timeoutMs: 40_000, ...(done ? { done: (b: any) => done(b, c) } : {}) });
      c.final.catch(() => {});
    }),
  );
}

/** Checks of a case's one ledger row, on the server `srv()` (started in `before`). */
export function caseLedger(cases: Record<string, Case>, srv: () => TestServer) {
  return {
    /** Settled once at exactly `micros`, never above what was reserved. */
    async settledOnce(name: string, micros: number | string): Promise<void> {
      const ledger = await charges(srv().db.sql, cases[name]!.id!);
      assert.equal(ledger.length, 1, name);
      assert.equal(ledger[0].status, 'settled', name);
      assert.equal(ledger[0].settled, String(micros), name);
      assert.ok(Number(ledger[0].reserved) >= Number(micros), `${name}: never above the reservation`);
    },
    /** Released: nothing settled, and nothing left held or spent in the account's budget. */
    async released(name: string): Promise<void> {
      const sql = srv().db.sql;
      const ledger = await charges(sql, cases[name]!.id!);
      assert.deepEqual(ledger.map((c) => [c.status, c.settled]), [['released', null]], name);
      const [usage] = await sql`
        select b.held_micros::text as held, b.settled_micros::text as settled
        from kiln_private.budget_periods b join kiln_private.charges c on c.pool_id = b.pool_id and c.period_start = b.period_start
        where c.generation_id = ${cases[name]!.id!}`;
      assert.deepEqual(usage, { held: '0', settled: '0' }, `${name}: nothing held or spent`);
    },
  };
}
