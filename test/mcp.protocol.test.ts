// MCP protocol over the h3 route with real auth: SDK 1.x client (2025-11-25), SDK 2.x client (2026-07-28),
// raw 2025-06-18 exchanges, tool error mapping, and the version (400) / method (405) gates.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client';
import { startMcpApp, startTestIssuer, type TestApp, type TestIssuer } from './_issuer.ts';

let iss: TestIssuer;
let app: TestApp;
let token: string;

before(async () => {
  iss = await startTestIssuer();
  app = await startMcpApp({ issuer: iss, linked: { [`${iss.issuer}|alice`]: 'acct-alice' } });
  iss.audience = app.mcpUrl;
  token = await iss.sign();
});
after(async () => {
  await app.close();
  await iss.close();
});

function post(body: unknown, headers: Record<string, string> = {}, method = 'POST') {
  return fetch(app.mcpUrl, {
    method,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      authorization: `Bearer ${token}`,
      ...headers,
    },
    ...(method === 'POST' && { body: JSON.stringify(body) }),
  });
}

async function rpcBody(res: Response): Promise<any> {
  const text = await res.text();
  if (!(res.headers.get('content-type') ?? '').includes('text/event-stream')) return JSON.parse(text);
  const data = text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => l.slice(6)).filter(Boolean);
  return JSON.parse(data.at(-1)!);
}

const initialize = (protocolVersion: string) => ({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion, capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
});

describe('SDK 1.x client, protocol 2025-11-25 (stateless legacy path)', () => {
  let client: ClientV1;
  before(async () => {
    client = new ClientV1({ name: 'v1-test', version: '1.0.0' });
    await client.connect(new TransportV1(new URL(app.mcpUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  });
  after(() => client.close());

  test('negotiates 2025-11-25 and lists tools with annotations and schemas', async () => {
    assert.equal(client.getServerVersion()?.name, 'kiln');
    const { tools } = await client.listTools();
    assert.deepEqual(tools.map((t) => t.name), ['echo', 'fail', 'crash', 'count']);
    const echo = tools[0]!;
    assert.equal(echo.annotations?.readOnlyHint, true);
    assert.equal(echo.annotations?.destructiveHint, false);
    assert.deepEqual(echo.inputSchema.required, ['message']);
    assert.equal(echo.outputSchema?.type, 'object');
  });

  test('calls a tool: text + structuredContent', async () => {
    const res = await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
    assert.equal(res.isError, undefined);
    assert.deepEqual(res.structuredContent, { message: 'hello', accountId: 'acct-alice' });
    assert.deepEqual(res.content, [{ type: 'text', text: 'hello' }]);
  });

  test('business error → isError result with {error:{type,message}} (passes the 1.x output-schema check)', async () => {
    const res = await client.callTool({ name: 'fail', arguments: {} });
    assert.equal(res.isError, true);
    assert.deepEqual(res.structuredContent, { error: { type: 'budget_exhausted', message: 'The generation budget for this period is exhausted.' } });
    assert.match((res.content as any)[0].text, /budget/);
  });

  test('invalid arguments → isError invalid_request; crash → server_error without leaking details', async () => {
    const bad = await client.callTool({ name: 'echo', arguments: { message: 42 } });
    assert.equal(bad.isError, true);
    assert.equal((bad.structuredContent as any).error.type, 'invalid_request');
    const crash = await client.callTool({ name: 'crash', arguments: {} });
    assert.equal(crash.isError, true);
    assert.equal((crash.structuredContent as any).error.type, 'server_error');
    assert.doesNotMatch(JSON.stringify(crash), /secret|exploded/);
    assert.ok(app.errors.some((e) => String(e).includes('database exploded')));
  });

  test('valibot-derived schemas: parse applies defaults; out-of-range → invalid_request', async () => {
    assert.deepEqual((await client.callTool({ name: 'count', arguments: {} })).structuredContent, { items: [1, 2, 3] });
    assert.deepEqual((await client.callTool({ name: 'count', arguments: { n: 2 } })).structuredContent, { items: [1, 2] });
    const bad = await client.callTool({ name: 'count', arguments: { n: 11 } });
    assert.equal(bad.isError, true);
    assert.equal((bad.structuredContent as any).error.type, 'invalid_request');
  });

  test('unknown tool stays a JSON-RPC error (-32602)', async () => {
    await assert.rejects(client.callTool({ name: 'nope', arguments: {} }), (e: any) => e.code === -32602);
  });
});

describe('SDK 2.x client, protocol 2026-07-28 (per-request envelope)', () => {
  for (const mode of [{ pin: '2026-07-28' }, 'auto'] as const) {
    test(`negotiation ${JSON.stringify(mode)}: lists and calls tools`, async () => {
      const client = new ClientV2({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode } });
      await client.connect(new TransportV2(new URL(app.mcpUrl), { authProvider: { token: async () => token } }));
      try {
        assert.equal(client.getProtocolEra(), 'modern');
        assert.equal(client.getNegotiatedProtocolVersion(), '2026-07-28');
        const { tools } = await client.listTools();
        assert.deepEqual(tools.map((t) => t.name), ['echo', 'fail', 'crash', 'count']);
        const ok = await client.callTool({ name: 'echo', arguments: { message: 'modern' } });
        assert.deepEqual(ok.structuredContent, { message: 'modern', accountId: 'acct-alice' });
        const err = await client.callTool({ name: 'fail', arguments: {} });
        assert.equal(err.isError, true);
        assert.equal((err.structuredContent as any).error.type, 'budget_exhausted');
      } finally {
        await client.close();
      }
    });
  }

  test('2.x client without a token gets the 401 challenge', async () => {
    const client = new ClientV2({ name: 'v2-test', version: '1.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await assert.rejects(client.connect(new TransportV2(new URL(app.mcpUrl))), /401|nauthori/);
  });
});

describe('raw HTTP: older revision and gates', () => {
  test('2025-06-18 client: initialize answers 2025-06-18, later requests carry the header', async () => {
    const init = await rpcBody(await post(initialize('2025-06-18')));
    assert.equal(init.result.protocolVersion, '2025-06-18');
    const list = await rpcBody(await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-protocol-version': '2025-06-18' }));
    assert.equal(list.result.tools.length, 4);
    const call = await rpcBody(
      await post({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { message: 'old' } } }, { 'mcp-protocol-version': '2025-06-18' }),
    );
    assert.deepEqual(call.result.structuredContent, { message: 'old', accountId: 'acct-alice' });
  });

  test('unknown initialize version is counter-offered (lifecycle rule), not rejected', async () => {
    const init = await rpcBody(await post(initialize('2024-01-01')));
    assert.equal(init.result.protocolVersion, '2025-11-25');
  });

  test('unsupported MCP-Protocol-Version header → 400 (before auth)', async () => {
    for (const v of ['1999-01-01', '2027-01-01', 'garbage']) {
      const res = await post({ jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-protocol-version': v, authorization: '' });
      assert.equal(res.status, 400, v);
      const body = await res.json();
      assert.equal(body.error.code, -32022);
      assert.ok(body.error.data.supported.includes('2026-07-28'));
    }
  });

  test('2026-07-28 request whose Mcp-Method header disagrees with the body → 400', async () => {
    const body = {
      jsonrpc: '2.0',
      id: 9,
      method: 'tools/list',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {},
        },
      },
    };
    const ok = await post(body, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/list' });
    assert.equal(ok.status, 200);
    assert.equal((await rpcBody(ok)).result.tools.length, 4);
    const bad = await post(body, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' });
    assert.equal(bad.status, 400);
  });

  test('GET, DELETE and PUT → 405 with Allow (stateless: no SSE stream, no session), even unauthenticated', async () => {
    for (const method of ['GET', 'DELETE', 'PUT']) {
      const res = await post(undefined, { authorization: '' }, method);
      assert.equal(res.status, 405, method);
      assert.match(res.headers.get('allow')!, /POST/);
    }
  });

  test('no Mcp-Session-Id is ever issued', async () => {
    const res = await post(initialize('2025-11-25'));
    assert.equal(res.headers.get('mcp-session-id'), null);
  });
});
