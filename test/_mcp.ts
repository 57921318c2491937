// MCP test helpers for the real server: the Kiln app (startServer) with its MCP endpoint trusting a
// loopback test issuer, identity links, and SDK 1.x (2025-11-25) / 2.x (2026-07-28) clients.
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import type { Config } from '../src/config.ts';
import type { Sql } from '../src/db/pool.ts';
import { startTestIssuer, type TestIssuer } from './_issuer.ts';
import { onCleanup, startServer, type TestServer } from './_setup.ts';

export interface McpServer extends TestServer {
  mcpUrl: string;
  iss: TestIssuer;
}

/** The real app with MCP mounted (OIDC_ISSUER = a loopback test issuer; MCP_URL = `<origin>/mcp`). */
export async function startMcpServer(opts: { config?: Partial<Config>; iss?: TestIssuer } = {}): Promise<McpServer> {
  const iss = opts.iss ?? (await startTestIssuer());
  if (!opts.iss) onCleanup(() => iss.close());
  const srv = await startServer({ config: { oidcIssuer: iss.issuer, ...opts.config } });
  const mcpUrl = `${srv.origin}/mcp`;
  if (!opts.iss) iss.audience = mcpUrl;
  return { ...srv, mcpUrl, iss };
}

export async function link(sql: Sql, issuer: string, subject: string, accountId: string, workspaceId: string | null = null) {
  await sql`select kiln.link_identity(${issuer}, ${subject}, ${accountId}::uuid, ${workspaceId}::uuid, null)`;
}

/** Anything with callTool/listTools/close (both SDK generations). */
export interface AnyClient {
  era: '2025-11-25' | '2026-07-28';
  callTool(p: { name: string; arguments?: Record<string, unknown> }): Promise<any>;
  listTools(): Promise<{ tools: any[] }>;
  close(): Promise<void>;
}

export async function connectV1(mcpUrl: string, token: string): Promise<AnyClient> {
  const client = new ClientV1({ name: 'kiln-test-v1', version: '1.0.0' });
  await client.connect(new TransportV1(new URL(mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return Object.assign(client, { era: '2025-11-25' as const }) as unknown as AnyClient;
}

export async function connectV2(mcpUrl: string, token: string): Promise<AnyClient> {
  const client = new ClientV2({ name: 'kiln-test-v2', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
  await client.connect(new TransportV2(new URL(mcpUrl), { authProvider: { token: async () => token } }));
  if (client.getNegotiatedProtocolVersion() !== '2026-07-28') throw new Error(`v2 client negotiated ${client.getNegotiatedProtocolVersion()}`);
  return Object.assign(client, { era: '2026-07-28' as const }) as unknown as AnyClient;
}

/** structuredContent of a successful call (throws with the tool error otherwise). */
export async function ok(client: AnyClient, name: string, args: Record<string, unknown> = {}): Promise<any> {
  const res = await client.callTool({ name, arguments: args });
  if (res.isError) throw new Error(`${name} → ${JSON.stringify(res.structuredContent ?? res.content)}`);
  return res.structuredContent;
}

/** The {type, message} of a tool error (throws when the call succeeded). */
export async function toolError(client: AnyClient, name: string, args: Record<string, unknown> = {}): Promise<{ type: string; message: string; text: string }> {
  const res = await client.callTool({ name, arguments: args });
  if (!res.isError) throw new Error(`${name} unexpectedly succeeded: ${JSON.stringify(res.structuredContent)}`);
  return { ...res.structuredContent.error, text: res.content?.[0]?.text };
}

/** Polls get_generation until a terminal status. */
export async function waitGeneration(client: AnyClient, id: string, timeoutMs = 15_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const g = await ok(client, 'get_generation', { id });
    if (g.status === 'completed' || g.status === 'failed') return g;
    if (Date.now() > until) throw new Error(`timed out waiting for generation ${id}: ${JSON.stringify(g)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Polls get_workflow_run until a terminal status. */
export async function waitRunMcp(client: AnyClient, workflowId: string, runId: string, timeoutMs = 20_000): Promise<any> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const r = await ok(client, 'get_workflow_run', { workflowId, runId });
    if (r.status === 'completed' || r.status === 'failed') return r;
    if (Date.now() > until) throw new Error(`timed out waiting for run ${runId}: ${JSON.stringify(r)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Signed URLs carry a fresh expiry and signature per read: compare them without the query. */
export function unsign<T>(body: T): T {
  return JSON.parse(JSON.stringify(body), (k, v) => (k === 'url' && typeof v === 'string' ? v.split('?')[0] : v));
}
