// `kiln listen --forward-to URL`: reads the key's event stream (GET /events) and POSTs each event
// to a local app, signed the Standard Webhooks way with a local secret printed at start — a
// receiver can be tested before it is reachable from the internet. Each forward carries the
// `webhook-id` the event's real deliveries carry, so deduplication behaves as in production. The
// stream resumes after a dropped connection with no gap and no repeat (the client's events.watch).

import { randomBytes } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { webhookIdOfStreamId } from '../../events/ids.ts';
import { parseArgs, required, UsageError } from '../args.ts';
import { clientFromEnv, EXIT, interruptible } from './exit.ts';
import { interactive, jsonLine } from './live.ts';

export const LISTEN_HELP = '--forward-to URL [--events TYPE,…] [--secret whsec_…] [--json] — forward this key\'s events to a local app, signed';

/** One forwarding attempt's deadline. */
const FORWARD_TIMEOUT_MS = 10_000;

export async function listen(argv: string[]): Promise<number> {
  const { values: flags } = parseArgs(argv, {
    options: { 'forward-to': { type: 'string' }, events: { type: 'string' }, secret: { type: 'string' }, json: { type: 'boolean' } },
  });
  const target = required(flags, 'forward-to');
  let url: URL;
  try {
    url = new URL(target);
  } catch {
    throw new UsageError('--forward-to must be an absolute http(s) URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError('--forward-to must be an absolute http(s) URL');
  const secret = flags.secret ?? `whsec_${randomBytes(32).toString('base64')}`;
  let signer: Webhook;
  try {
    signer = new Webhook(secret);
  } catch {
    throw new UsageError('--secret must be a whsec_ secret (base64 after the prefix)');
  }
  const only = flags.events ? new Set(flags.events.split(',').map((s) => s.trim()).filter(Boolean)) : null;
  const tty = interactive(flags.json);
  const client = clientFromEnv();
  const stop = interruptible();
  if (tty) process.stdout.write(`Forwarding events to ${url.href}\nSigning secret (verify with it in your app): ${secret}\nCtrl-C to stop.\n`);
  else jsonLine(process.stdout, { event: 'listening', forward_to: url.href, secret });
  try {
    for await (const e of client.events.watch({ signal: stop.signal })) {
      if (only && !only.has(e.event)) continue;
      // The stream's data is the message a webhook gets: forwarded byte for byte as the server wrote it.
      const body = JSON.stringify(e.data);
      const id = webhookIdOfStreamId(e.id);
      if (!id) throw new Error(`the event stream sent an event id this kiln does not know (${e.id}): is the server another version?`);
      const now = new Date();
      const started = performance.now();
      let status: number | null = null;
      let error: string | null = null;
      try {
        const res = await fetch(url, {
          method: 'POST',
          redirect: 'manual',
          signal: AbortSignal.any([stop.signal, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
          headers: {
            'content-type': 'application/json',
            'webhook-id': id,
            'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
            'webhook-signature': signer.sign(id, now, body),
          },
          body,
        });
        status = res.status;
        await res.body?.cancel();
      } catch (err) {
        if (stop.signal.aborted) throw err;
        error = (err as Error).name === 'TimeoutError' ? 'timeout' : 'refused';
      }
      const ms = Math.round(performance.now() - started);
      if (tty) process.stdout.write(`${e.event.padEnd(24)} → ${status ?? error} (${ms} ms)  ${e.id}\n`);
      else jsonLine(process.stdout, { event: 'forwarded', type: e.event, id: e.id, webhook_id: id, status, error, ms });
    }
    return EXIT.ok;
  } catch (e) {
    if (stop.signal.aborted) return EXIT.ok;
    throw e;
  } finally {
    stop.dispose();
  }
}
