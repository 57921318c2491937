// Helpers for workflow tests: saving graphs, catalog entries served by the loopback OpenAI peer,
// polling runs, and reading the ledger of a run.

import fs from 'node:fs';
import path from 'node:path';
import type { Sql } from '../src/db/pool.ts';
import { createWorkflow } from '../src/workflows/authoring.ts';
import type { OpenAIPeer, PeerRequest } from './_openai-peer.ts';
import { api, type TestServer } from './_setup.ts';

export const EXAMPLES = path.resolve(import.meta.dirname, '..', 'src', 'workflows', 'examples');

export function example(name: string): any {
  return JSON.parse(fs.readFileSync(path.join(EXAMPLES, `${name}.json`), 'utf8'));
}

/** Saves a graph (validated like `kiln workflow import`) and returns the workflow id; `workspaceId`: the workspace's workflow. */
export async function saveWorkflow(srv: TestServer, accountId: string, graph: unknown, name = 'test workflow', workspaceId: string | null = null): Promise<string> {
  const w = await createWorkflow(srv.db.sql, srv.ctx.config, { accountId, workspaceId, name, graph });
  return w.id;
}

/** A text model (`peer/coder`) and an image model (`peer/painter`) served by the peer; prices in micros. */
export async function peerModels(sql: Sql, peer: OpenAIPeer): Promise<void> {
  const entries = [
    {
      id: 'peer/coder', name: 'Peer coder', category: 'text', provider: 'openai', upstream: { baseUrl: peer.url, model: 'peer-chat' },
      supports_image_input: true, input_modalities: ['text', 'image'], output_modalities: ['text'],
      cost: { input_micros_per_token: 1, output_micros_per_token: 2 }, maxOutputTokens: 1000, markup: 1,
    },
  ];
  for (const e of entries) await sql`select kiln.upsert_model(${sql.json(e as any)})`;
}

/** The prompt text of a chat request (the user message, text parts joined). */
export function userText(req: PeerRequest): string {
  const msg = (req.json?.messages ?? []).find((m: any) => m.role === 'user');
  if (!msg) return '';
  return typeof msg.content === 'string' ? msg.content : msg.content.filter((p: any) => p.type === 'text').map((p: any) => p.text).join('\n');
}

/** Polls GET /workflows/{wf}/runs/{run} until `done(body)` (default: a terminal status). */
export async function waitRun(srv: TestServer, key: string, wf: string, run: string, opts: { timeoutMs?: number; done?: (b: any) => boolean } = {}) {
  const done = opts.done ?? ((b: any) => b.status === 'completed' || b.status === 'failed');
  const until = Date.now() + (opts.timeoutMs ?? 20_000);
  for (;;) {
    const res = await api(srv.base, key, `/workflows/${wf}/runs/${run}`);
    if (res.status !== 200) throw new Error(`GET run → ${res.status} ${JSON.stringify(res.body)}`);
    if (done(res.body)) return res.body;
    if (Date.now() > until) throw new Error(`timed out waiting for run ${run}: ${JSON.stringify(res.body)}`);
    await new Promise((r) => setTimeout(r, 40));
  }
}

/** Starts a run over HTTP and returns its id (asserting the 202 body). */
export async function startRun(srv: TestServer, key: string, wf: string): Promise<string> {
  const res = await api(srv.base, key, `/workflows/${wf}/runs`, { method: 'POST' });
  if (res.status !== 202) throw new Error(`POST run → ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.id;
}

/** Every ledger row of a run, by output node. */
export async function runCharges(sql: Sql, runId: string) {
  return sql`select node_id, status, reserved_micros::text as reserved, settled_micros::text as settled, key_id, origin, model_id
             from kiln_private.charges where workflow_run_id = ${runId} order by node_id, created_at`;
}

/** A peer reply after `ms` milliseconds. */
export function chatAfter(ms: number, content: string) {
  return {
    delayMs: ms,
    headers: { 'x-request-id': 'req_peer_chat' },
    json: {
      id: 'chatcmpl-peer', object: 'chat.completion',
      choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
      usage: { prompt_tokens: 10, completion_tokens: 20, total_tokens: 30 },
    },
  };
}
