// Jobs made over MCP count too: a generate_code call's job is delivered to the webhook endpoint of
// the account the identity is linked to, with data = the job's GET /generations body shape.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker } from './_generations.ts';
import { connectV2, link, ok, startMcpServer, waitGeneration, type McpServer } from './_mcp.ts';
import { api, createAccount, createKey } from './_setup.ts';
import { startReceiver, verify } from './_webhooks.ts';

let srv: McpServer;

before(async () => {
  srv = await startMcpServer({ config: { webhookAllowPrivate: true } });
  await startTestWorker(srv);
});

test('an MCP job is delivered to its account\'s endpoint', async () => {
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  const { key } = await createKey(srv.db.sql, a.id);
  await link(srv.db.sql, srv.iss.issuer, 'webhook-user', a.id);
  const rcv = await startReceiver();
  const e = (await api(srv.base, key, '/webhooks', { body: { url: rcv.url } })).body;
  const client = await connectV2(srv.mcpUrl, await srv.iss.sign({ sub: 'webhook-user' }));
  try {
    const started = await ok(client, 'generate_code', { prompt: 'a button', targetLanguage: 'tsx' });
    const done = await waitGeneration(client, started.id);
    assert.equal(done.status, 'completed');
    const [d] = await rcv.wait(1);
    const msg = verify(e.secret, d!);
    assert.equal(msg.type, 'generation.completed');
    assert.equal(msg.data.id, started.id);
    assert.equal(msg.data.status, 'completed');
    assert.equal(msg.data.result.code, done.result.code);
  } finally {
    await client.close();
  }
});
