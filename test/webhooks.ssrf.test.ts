// Without KILN_WEBHOOK_ALLOW_PRIVATE, webhook URLs must be https, carry no credentials, and resolve
// only to public addresses — checked when saved (400) and again at every attempt, so an endpoint
// whose host now points inside never reaches it.

import assert from 'node:assert/strict';
import { before, test } from 'node:test';
import { startTestWorker, until } from './_generations.ts';
import { api, createAccount, createKey, startServer, type TestServer } from './_setup.ts';
import { startReceiver } from './_webhooks.ts';

let srv: TestServer;
let key: string;

before(async () => {
  srv = await startServer({ config: { webhookAllowPrivate: false, webhookRetrySchedule: [1] } });
  await startTestWorker(srv);
  const a = await createAccount(srv.db.sql, { tier: 'pro' });
  key = (await createKey(srv.db.sql, a.id)).key;
});

const REFUSED = [
  'http://example.com/hook',
  'https://user:pass@example.com/hook',
  'https://user@example.com/hook',
  'https://127.0.0.1/hook',
  'https://127.1.2.3/hook',
  'https://localhost/hook',
  'https://2130706433/hook', // 127.0.0.1 in decimal
  'https://0x7f.0.0.1/hook',
  'https://[::1]/hook',
  'https://10.1.2.3/hook',
  'https://172.16.0.1/hook',
  'https://192.168.1.1/hook',
  'https://169.254.169.254/latest/meta-data',
  'https://169.254.1.1/hook',
  'https://100.64.0.1/hook', // CGNAT
  'https://100.127.255.254/hook',
  'https://224.0.0.1/hook', // multicast
  'https://0.0.0.0/hook', // unspecified
  'https://[::]/hook',
  'https://[fe80::1]/hook', // link-local
  'https://[fc00::1]/hook', // unique local
  'https://[fd00:ec2::254]/hook', // AWS metadata over IPv6
  'https://[ff02::1]/hook', // multicast
  'https://[::ffff:127.0.0.1]/hook', // IPv4-mapped
  'https://[::ffff:7f00:1]/hook',
  'https://[::ffff:169.254.169.254]/hook',
  'https://[::ffff:10.0.0.1]/hook',
  'https://[64:ff9b::a9fe:a9fe]/hook', // NAT64 of 169.254.169.254
];

test('every non-public or malformed URL is refused at create and at update, with 400 invalid_request', async () => {
  const ok = await api(srv.base, key, '/webhooks', { body: { url: 'https://93.184.215.14/hook' } });
  assert.equal(ok.status, 201, 'a public literal address is accepted');
  for (const url of REFUSED) {
    const res = await api(srv.base, key, '/webhooks', { body: { url } });
    assert.equal(res.status, 400, `${url} → ${res.status} ${JSON.stringify(res.body)}`);
    assert.equal(res.body.error.type, 'invalid_request');
    assert.match(res.body.error.message, /^url: /);
    const up = await api(srv.base, key, `/webhooks/${ok.body.id}`, { method: 'PATCH', body: { url } });
    assert.equal(up.status, 400, `PATCH ${url}`);
  }
  const [{ n }] = await srv.db.sql`select count(*)::int as n from kiln_private.webhook_endpoints`;
  assert.equal(n, 1);
  assert.equal((await api(srv.base, key, `/webhooks/${ok.body.id}`)).body.url, 'https://93.184.215.14/hook');
});

test('checked again at every attempt: an endpoint whose URL now points at loopback is never contacted', async () => {
  const rcv = await startReceiver();
  const ok = await api(srv.base, key, '/webhooks', { body: { url: 'https://93.184.215.14/hook' } });
  // As if the host had been re-pointed after it was saved (DNS changes, or a row edited by hand).
  await srv.db.sql`update kiln_private.webhook_endpoints set url = ${rcv.url} where id = ${ok.body.id}`;
  await api(srv.base, key, `/webhooks/${ok.body.id}/test`, { method: 'POST' });
  const d = await until('the delivery to fail', async () => {
    const [x] = (await api(srv.base, key, `/webhooks/${ok.body.id}/deliveries`)).body.data;
    return x?.status === 'failed' && x;
  }, 20_000);
  assert.match(d.lastError, /^refused: /);
  assert.equal(d.lastStatusCode, null);
  assert.equal(rcv.got.length, 0);
});
