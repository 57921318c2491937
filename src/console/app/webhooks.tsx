// Webhooks: the endpoints of this key's billing scope, "Add endpoint" (the signing secret is shown
// once), "Send test event", and each endpoint's delivery log with redeliver.

import { useEffect, useState } from 'preact/hooks';
import { shortId, when, type KilnClient, type WebhookEndpoint } from './api.ts';
import { Alert, CopyButton, Empty, Loading, Section, Status, useLoad } from './ui.tsx';

type Endpoint = WebhookEndpoint;

function Deliveries({ client, endpoint }: { client: KilnClient; endpoint: Endpoint }) {
  const [load, reload] = useLoad((signal) => client.webhooks.deliveries(endpoint.id, { limit: 20 }, { signal }), [client, endpoint.id]);
  const [msg, setMsg] = useState<{ text?: string; error?: unknown }>({});
  // Deliveries have no event stream: the open log reads itself again every few seconds.
  useEffect(() => {
    const t = setInterval(() => document.visibilityState === 'visible' && reload(), 4000);
    return () => clearInterval(t);
  }, [endpoint.id]);
  const post = async (send: () => Promise<unknown>, text: string) => {
    setMsg({});
    try {
      await send();
      setMsg({ text });
      setTimeout(reload, 400);
    } catch (error) {
      setMsg({ error });
    }
  };
  return (
    <div class="deliveries">
      <div class="row spread">
        <h3>Delivery log</h3>
        <div class="actions">
          <button type="button" class="btn ghost small" onClick={reload}>Refresh</button>
          <button type="button" class="btn small" onClick={() => post(() => client.webhooks.test(endpoint.id), 'Test event queued.')}>Send test event</button>
        </div>
      </div>
      {msg.text && <p class="notice ok" role="status">{msg.text}</p>}
      {msg.error !== undefined && <Alert error={msg.error} />}
      {load.state === 'loading' && <Loading what="deliveries" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && load.value.data.length === 0 && <p class="muted">No deliveries yet.</p>}
      {load.state === 'ok' && load.value.data.length > 0 && (
        <div class="table-card">
          <table class="table">
            <caption class="sr-only">Deliveries to {endpoint.url}</caption>
            <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col">Attempts</th><th scope="col">Last answer</th><th scope="col">Created</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
            <tbody>
              {load.value.data.map((d) => (
                <tr key={d.id}>
                  <td><code>{d.event}</code></td>
                  <td><Status status={d.status} /></td>
                  <td>{d.attempts}</td>
                  <td>{d.lastStatusCode ?? d.lastError ?? '—'}</td>
                  <td>{when(d.createdAt)}</td>
                  <td><button type="button" class="btn ghost small" aria-label={`Redeliver ${d.event} ${shortId(d.id)}`}
                    onClick={() => post(() => client.webhooks.redeliver(endpoint.id, d.id), 'Redelivery queued.')}>Redeliver</button></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </div>
  );
}

export function Webhooks({ client }: { client: KilnClient }) {
  const [load, reload] = useLoad(async (signal) => (await client.webhooks.list({ signal })).data, [client]);
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [added, setAdded] = useState<{ secret: string; url: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [open, setOpen] = useState<string | null>(null);

  const add = async (e: Event) => {
    e.preventDefault();
    setError(null);
    setBusy(true);
    try {
      const created = await client.webhooks.create({ url: url.trim(), ...(description.trim() ? { description: description.trim() } : {}) });
      setAdded({ secret: created.secret, url: created.url });
      setUrl('');
      setDescription('');
      setOpen(created.id);
      reload();
    } catch (err) {
      setError(err);
    } finally {
      setBusy(false);
    }
  };
  const toggle = async (ep: Endpoint) => {
    try {
      await client.webhooks.update(ep.id, { enabled: !ep.enabled });
      reload();
    } catch (err) {
      setError(err);
    }
  };

  return (
    <Section title="Webhooks" intro="Kiln POSTs signed events (Standard Webhooks) to your endpoints when jobs and runs settle.">
      {load.state === 'loading' && <Loading what="endpoints" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && (
        <>
          <form class="card form" onSubmit={add}>
            <h2 class="card-title">Add an endpoint</h2>
            <div class="field-row">
              <div class="field grow">
                <label for="wh-url">Endpoint URL</label>
                <input id="wh-url" type="url" inputMode="url" placeholder="https://example.com/kiln/webhooks" value={url} required onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
              </div>
              <div class="field">
                <label for="wh-desc">Description</label>
                <input id="wh-desc" type="text" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
              </div>
            </div>
            {error !== null && <Alert error={error} />}
            <div class="row"><button class="btn primary" type="submit" disabled={busy}>Add endpoint</button></div>
          </form>
          {added && (
            <div class="card secret" role="region" aria-label="Signing secret">
              <h2 class="card-title">Signing secret for {added.url}</h2>
              <p>Store it now: it is shown only once. Verify deliveries with it (<code>standardwebhooks</code>).</p>
              <div class="row"><code class="wrap" data-secret>{added.secret}</code><CopyButton text={added.secret} /></div>
              <button type="button" class="btn ghost small" onClick={() => setAdded(null)}>I stored it</button>
            </div>
          )}
          {load.value.length === 0 && <Empty title="No endpoints yet">Add one above to receive events.</Empty>}
          <ul class="list">
            {load.value.map((ep) => (
              <li key={ep.id} class="card endpoint" data-endpoint-id={ep.id}>
                <div class="row spread">
                  <div class="min0">
                    <p class="list-title wrap">{ep.url}</p>
                    <p class="muted small">{ep.description ? `${ep.description} · ` : ''}{ep.events.length ? ep.events.join(', ') : 'all events'} · since {when(ep.createdAt)}</p>
                  </div>
                  <div class="actions">
                    <Status status={ep.enabled ? 'enabled' : 'disabled'} />
                    <button type="button" class="btn ghost small" onClick={() => toggle(ep)}>{ep.enabled ? 'Disable' : 'Enable'}</button>
                    <button type="button" class="btn small" aria-expanded={open === ep.id} onClick={() => setOpen(open === ep.id ? null : ep.id)}>Deliveries</button>
                  </div>
                </div>
                {ep.disabledReason && <p class="notice error">{ep.disabledReason}</p>}
                {open === ep.id && <Deliveries client={client} endpoint={ep} />}
              </li>
            ))}
          </ul>
        </>
      )}
    </Section>
  );
}
