// Batches (docs/console.md, "Batches"; the API: docs/api.md, "Batches"): the account's batches,
// newest first, each with its status, counts and a progress bar of completed, failed and canceled
// lines; "Upload JSONL" (POST /batches, every problem of a refused file listed by its pointer); and a
// batch's page: counts, times, spend, the bar live from GET /batches/{id}/events, Cancel (after a
// confirm), Download results (GET /batches/{id}/results, saved as batch-<id>.jsonl) and its lines
// (GET /generations?batchId=…), each linking to the generation's detail view.

import { useEffect, useRef, useState } from 'preact/hooks';
import { follow, type SseMessage } from '../../client/events.ts';
import { retryOptions } from '../../client/retry.ts';
import type { components } from '../../client/index.ts';
import { errorText, KilnError, money, shortId, when, whenMinute, type Generation, type KilnClient } from './api.ts';
import { Alert, ConfirmDialog, CopyButton, go, Loading, Section, Status, useLoad } from './ui.tsx';

export type Batch = components['schemas']['Batch'];

/** A batch that will change no more. */
const ENDED = new Set(['completed', 'canceled', 'expired']);
const STATUS_LABEL: Record<string, string> = { in_progress: 'in progress', completed: 'completed', canceling: 'canceling', canceled: 'canceled', expired: 'expired' };
/** The most a batch may hold (docs/api.md, "Batches"): a bigger file is refused before it is sent. */
const MAX_BYTES = 100 * 1024 * 1024;
const LIST_PAGE = 20;
const LINES_PAGE = 25;
/** As the console's client (api.ts): three drops in a row with no event between them end the watch. */
const RETRY = retryOptions({ maxAttempts: 3 });

export const ended = (b: Batch) => b.requestCounts.completed + b.requestCounts.failed + b.requestCounts.canceled;

/**
 * The newer of two readings of one batch (a stream event and a cancel's answer may arrive in
 * either order): an ended batch never goes back to running, and counts never go down.
 */
export function newer(prev: Batch | null, next: Batch): Batch {
  if (!prev || prev.id !== next.id) return next;
  if (ENDED.has(prev.status) && !ENDED.has(next.status)) return prev;
  if (ended(next) < ended(prev)) return prev;
  return next;
}

export function BatchStatus({ status }: { status: string }) {
  return <span class={`badge s-${status}`} data-status={status}>{STATUS_LABEL[status] ?? status}</span>;
}

/**
 * The lines of a batch as one bar: completed, failed (expired included) and canceled as segments
 * of the total, the rest (waiting or running) the empty track.
 */
export function BatchBar({ b, big, label }: { b: Batch; big?: boolean; label: string }) {
  const c = b.requestCounts;
  const pct = (n: number) => (c.total ? (n / c.total) * 100 : 0);
  const done = ended(b);
  return (
    <div class={`batch-bar${big ? ' big' : ''}`} role="progressbar" aria-label={label} aria-valuemin={0} aria-valuemax={c.total} aria-valuenow={done}
      aria-valuetext={`${done} of ${c.total} lines ended: ${c.completed} completed, ${c.failed} failed, ${c.canceled} canceled`}
      data-completed={c.completed} data-failed={c.failed} data-canceled={c.canceled} data-total={c.total}>
      {c.completed > 0 && <span class="seg seg-completed" style={{ width: `${pct(c.completed)}%` }} />}
      {c.failed > 0 && <span class="seg seg-failed" style={{ width: `${pct(c.failed)}%` }} />}
      {c.canceled > 0 && <span class="seg seg-canceled" style={{ width: `${pct(c.canceled)}%` }} />}
    </div>
  );
}

// ------------------------------------------------------------------ the list

interface ListPage {
  items: Batch[];
  nextCursor: string | null;
}

async function loadBatches(client: KilnClient, cursor: string | null, signal?: AbortSignal): Promise<ListPage> {
  const { data, error, response } = await client.raw.GET('/batches', { params: { query: { limit: LIST_PAGE, ...(cursor ? { cursor } : {}) } }, signal });
  if (!response.ok || !data) throw KilnError.from(response, error);
  return { items: data.data, nextCursor: data.nextCursor };
}

/** The lines of JSONL the empty state and the upload form show. */
function HowTo() {
  const curl = `curl -X POST ${location.origin}/api/v1/batches \\\n  -H "Authorization: Bearer $KILN_API_KEY" \\\n  -H "Content-Type: application/jsonl" \\\n  --data-binary @batch.jsonl`;
  const line = '{"custom_id": "hero-1", "method": "POST", "url": "/api/v1/generations", "body": {"type": "image", "prompt": "A red bicycle"}}';
  return (
    <div class="howto">
      <p>A batch is a JSON Lines file, one <code>POST /generations</code> request a line (OpenAI's batch input format), up to 50,000 lines:</p>
      <div class="howto-code"><pre class="code">{line}</pre><CopyButton text={line} label="Copy line" /></div>
      <p>Upload it below, or send it with <code>curl</code>:</p>
      <div class="howto-code"><pre class="code">{curl}</pre><CopyButton text={curl} label="Copy command" /></div>
      <p class="muted small">Lines start behind interactive work, a few at a time, and each reserves its cost only when it starts. Results stay downloadable here.</p>
    </div>
  );
}

/** "Upload JSONL": POST /batches with the file as it is; a refused file lists every problem by its pointer. */
function Upload({ client }: { client: KilnClient }) {
  const [file, setFile] = useState<File | null>(null);
  const [state, setState] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  // One key per chosen file: the client's retries never start it twice.
  const key = useRef('');
  const problems = state.error instanceof KilnError ? state.error.details : [];
  const submit = async (e: Event) => {
    e.preventDefault();
    if (!file) {
      setState({ busy: false, error: new Error('Choose a JSONL file first.') });
      return;
    }
    if (file.size > MAX_BYTES) {
      setState({ busy: false, error: new Error(`${file.name} is ${(file.size / 1024 / 1024).toFixed(1)} MB: a batch is at most 100 MB.`) });
      return;
    }
    setState({ busy: true });
    try {
      const { data, error, response } = await client.raw.POST('/batches', {
        body: file as never,
        bodySerializer: (b: unknown) => b as BodyInit,
        headers: { 'content-type': 'application/jsonl' },
        params: { header: { 'Idempotency-Key': key.current } },
      });
      if (!response.ok || !data) throw KilnError.from(response, error);
      go(`batches/${data.id}`);
    } catch (error) {
      setState({ busy: false, error });
    }
  };
  return (
    <form class="card upload" onSubmit={submit} noValidate aria-labelledby="upload-title">
      <h2 class="card-title" id="upload-title">Upload JSONL</h2>
      <div class="row upload-row">
        <div class="field grow">
          <label for="batch-file">Batch file (.jsonl)</label>
          <input id="batch-file" type="file" accept=".jsonl,.ndjson,.jsonlines,.txt,application/jsonl,application/x-ndjson"
            aria-describedby={state.error !== undefined ? 'upload-error' : undefined}
            onChange={(e) => {
              setFile((e.target as HTMLInputElement).files?.[0] ?? null);
              key.current = crypto.randomUUID?.() ?? `${Date.now()}-${Math.random()}`;
              setState({ busy: false });
            }} />
        </div>
        <button class="btn primary" type="submit" disabled={state.busy}>{state.busy ? 'Uploading…' : 'Start batch'}</button>
      </div>
      {state.error !== undefined && (
        <div id="upload-error" class="notice error problems" role="alert">
          <p>{problems.length ? `The file was refused: ${problems.length} problem${problems.length === 1 ? '' : 's'}. Nothing was started.` : errorText(state.error)}</p>
          {problems.length > 0 && (
            <ul class="upload-problems">
              {problems.slice(0, 200).map((d) => <li key={d.path}><code>{d.path}</code> {d.message}</li>)}
              {problems.length > 200 && <li>…and {problems.length - 200} more.</li>}
            </ul>
          )}
        </div>
      )}
    </form>
  );
}

function List({ client }: { client: KilnClient }) {
  const [pages, setPages] = useState<ListPage[]>([]);
  const [load, reload] = useLoad(async (signal) => {
    const p = await loadBatches(client, null, signal);
    setPages([p]);
    return p;
  }, [client]);
  const [more, setMore] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const items = pages.flatMap((p) => p.items);
  const last = pages[pages.length - 1];
  const running = items.some((b) => !ENDED.has(b.status));
  // Batches have no list stream: while one shown runs, the first page is read again every few
  // seconds, its batches updated in place and new ones put on top.
  useEffect(() => {
    if (!running) return;
    const ac = new AbortController();
    const t = setInterval(async () => {
      if (document.visibilityState !== 'visible') return;
      try {
        const fresh = await loadBatches(client, null, ac.signal);
        const byId = new Map(fresh.items.map((b) => [b.id, b]));
        setPages((ps) => {
          if (!ps.length) return ps;
          const known = new Set(ps.flatMap((p) => p.items.map((b) => b.id)));
          const added = fresh.items.filter((b) => !known.has(b.id));
          return ps.map((p, i) => ({ ...p, items: [...(i === 0 ? added : []), ...p.items.map((b) => newer(b, byId.get(b.id) ?? b))] }));
        });
      } catch {
        /* the next tick tries again; Refresh reads it all */
      }
    }, 3000);
    return () => {
      clearInterval(t);
      ac.abort();
    };
  }, [client, running]);

  return (
    <Section title="Batches" intro="Bulk work from a JSON Lines file: each line a generation, started a few at a time behind interactive work."
      actions={<button type="button" class="btn ghost small" onClick={reload}>Refresh</button>}>
      {load.state === 'loading' && <Loading what="batches" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && items.length === 0 && (
        <div class="empty batches-empty">
          <p class="empty-title">No batches yet</p>
          <HowTo />
        </div>
      )}
      {items.length > 0 && (
        <div class="card table-card">
          <table class="table batches">
            <caption class="sr-only">Batches, newest first</caption>
            <thead>
              <tr>
                <th scope="col">Batch</th><th scope="col">Status</th><th scope="col">Progress</th>
                <th scope="col" class="num">Completed</th><th scope="col" class="num">Failed</th><th scope="col" class="num">Canceled</th>
                <th scope="col">Created</th><th scope="col">Expires</th>
              </tr>
            </thead>
            <tbody>
              {items.map((b) => (
                <tr key={b.id} data-batch-id={b.id} data-status={b.status}>
                  <th scope="row"><a href={`#/batches/${b.id}`} title={b.id} aria-label={`Batch ${shortId(b.id)}`}><code>{shortId(b.id)}</code></a></th>
                  <td><BatchStatus status={b.status} /></td>
                  <td class="progress-cell">
                    <BatchBar b={b} label={`Batch ${shortId(b.id)} progress`} />
                    <span class="muted small nowrap">{ended(b)} / {b.requestCounts.total}</span>
                  </td>
                  <td class="num">{b.requestCounts.completed}</td>
                  <td class="num">{b.requestCounts.failed}</td>
                  <td class="num">{b.requestCounts.canceled}</td>
                  <td class="nowrap">{when(b.createdAt)}</td>
                  <td class={`nowrap${ENDED.has(b.status) ? ' muted' : ''}`}>{ENDED.has(b.status) ? '—' : whenMinute(b.expiresAt)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {last?.nextCursor && (
        <div class="center">
          <button type="button" class="btn" disabled={more.busy} onClick={async () => {
            setMore({ busy: true });
            try {
              const p = await loadBatches(client, last.nextCursor);
              setPages((ps) => [...ps, p]);
              setMore({ busy: false });
            } catch (error) {
              setMore({ busy: false, error });
            }
          }}>{more.busy ? 'Loading…' : 'Load more'}</button>
          {more.error !== undefined && <Alert error={more.error} />}
        </div>
      )}
      {load.state === 'ok' && items.length > 0 && <details class="howto-more"><summary>How to start a batch from a file or with curl</summary><HowTo /></details>}
      {load.state !== 'error' && <Upload client={client} />}
    </Section>
  );
}

// ------------------------------------------------------------------ one batch

/** GET /batches/{id}/events: the batch after lines end, and last the ended batch; resumed with Last-Event-ID after a drop. */
export function watchBatch(client: KilnClient, id: string, signal: AbortSignal): AsyncGenerator<{ id: string; data: Batch; terminal: boolean }, void, undefined> {
  return follow({
    retry: RETRY,
    options: { signal },
    async open(last, s) {
      const { data, error, response } = await client.raw.GET('/batches/{id}/events', {
        params: { path: { id }, header: last === null ? {} : { 'Last-Event-ID': last } }, headers: { accept: 'text/event-stream' }, parseAs: 'stream', signal: s,
      });
      if (!response.ok) throw KilnError.from(response, error);
      if (!(data instanceof ReadableStream)) throw new KilnError({ status: response.status, type: 'server_error', message: 'The event stream answer had no body.', requestId: response.headers.get('x-request-id') });
      return data as ReadableStream<Uint8Array>;
    },
    toEvent(m: SseMessage) {
      if (m.id === null || (m.event !== 'progress' && m.event !== 'status')) return null;
      const data = JSON.parse(m.data) as Batch;
      return { id: m.id, data, terminal: m.event === 'status' };
    },
  });
}

interface LinePage {
  items: Generation[];
  nextCursor: string | null;
}

async function loadLines(client: KilnClient, batchId: string, cursor: string | null, signal?: AbortSignal): Promise<LinePage> {
  const r = await client.generations.list({ batchId, limit: LINES_PAGE, ...(cursor ? { cursor } : {}) }, { signal });
  return { items: r.data, nextCursor: r.nextCursor };
}

/** The batch's lines, a page at a time; `tick` (a line ended) reads the first page again. */
function Lines({ client, batchId, tick }: { client: KilnClient; batchId: string; tick: number }) {
  const [pages, setPages] = useState<LinePage[]>([]);
  const [load] = useLoad(async (signal) => {
    const p = await loadLines(client, batchId, null, signal);
    setPages([p]);
    return p;
  }, [client, batchId]);
  const [more, setMore] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  // At most one refresh in flight, and two a second: a fast batch sends many events.
  const refreshing = useRef(false);
  const wanted = useRef(false);
  const refresh = async () => {
    if (refreshing.current) {
      wanted.current = true;
      return;
    }
    refreshing.current = true;
    try {
      do {
        wanted.current = false;
        const fresh = await loadLines(client, batchId, null).catch(() => null);
        if (fresh) {
          const byId = new Map(fresh.items.map((g) => [g.id, g]));
          setPages((ps) => (ps.length ? ps.map((p, i) => ({ ...(i === 0 ? { ...p, nextCursor: fresh.nextCursor } : p), items: p.items.map((g) => byId.get(g.id) ?? g) })) : [fresh]));
        }
        await new Promise((r) => setTimeout(r, 500));
      } while (wanted.current);
    } finally {
      refreshing.current = false;
    }
  };
  useEffect(() => {
    if (tick > 0) void refresh();
  }, [tick]);

  const items = pages.flatMap((p) => p.items);
  const last = pages[pages.length - 1];
  return (
    <div class="card">
      <h2 class="card-title">Lines</h2>
      {load.state === 'loading' && <Loading what="the lines" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {load.state === 'ok' && items.length === 0 && <p class="muted">No lines.</p>}
      {items.length > 0 && (
        <div class="table-card flush">
          <table class="table lines">
            <caption class="sr-only">The batch's lines</caption>
            <thead>
              <tr><th scope="col">custom_id</th><th scope="col">Status</th><th scope="col">Model</th><th scope="col" class="num">Cost</th><th scope="col">Generation</th></tr>
            </thead>
            <tbody>
              {items.map((g) => (
                <tr key={g.id} data-generation-id={g.id} data-custom-id={g.customId}>
                  <th scope="row"><code class="wrap">{g.customId ?? '—'}</code></th>
                  <td><Status status={g.status} />{g.error && <span class="line-error muted small" title={g.error}> {g.error}</span>}</td>
                  <td class="muted">{g.result?.model ?? '—'}</td>
                  <td class="num">{g.result ? money(g.result.costMicros) : g.status === 'failed' ? '$0' : '—'}</td>
                  <td><a href={`#/generations/${g.id}`} title={g.id} aria-label={`Generation ${shortId(g.id)} (${g.customId ?? 'line'})`}><code>{shortId(g.id)}</code></a></td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {last?.nextCursor && (
        <div class="center">
          <button type="button" class="btn small" disabled={more.busy} onClick={async () => {
            setMore({ busy: true });
            try {
              const p = await loadLines(client, batchId, last.nextCursor);
              setPages((ps) => [...ps, p]);
              setMore({ busy: false });
            } catch (error) {
              setMore({ busy: false, error });
            }
          }}>{more.busy ? 'Loading…' : 'Load more lines'}</button>
          {more.error !== undefined && <Alert error={more.error} />}
        </div>
      )}
    </div>
  );
}

/** GET /batches/{id}/results through the console's client (its key or session cookie), saved as batch-<id>.jsonl. */
async function downloadResults(client: KilnClient, id: string): Promise<number> {
  const { data, error, response } = await client.raw.GET('/batches/{id}/results', { params: { path: { id } }, parseAs: 'blob' });
  if (!response.ok || !(data instanceof Blob)) throw KilnError.from(response, error);
  const url = URL.createObjectURL(new Blob([data], { type: 'application/jsonl' }));
  const a = document.createElement('a');
  a.href = url;
  a.download = `batch-${id}.jsonl`;
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  // The download has its own copy once it started.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
  return data.size;
}

function size(bytes: number): string {
  return bytes < 1024 ? `${bytes} B` : bytes < 1024 * 1024 ? `${(bytes / 1024).toFixed(1)} KB` : `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

function Detail({ client, id }: { client: KilnClient; id: string }) {
  const [batch, setBatch] = useState<Batch | null>(null);
  const [load] = useLoad(async (signal) => {
    const { data, error, response } = await client.raw.GET('/batches/{id}', { params: { path: { id } }, signal });
    if (!response.ok || !data) throw KilnError.from(response, error);
    setBatch((prev) => newer(prev, data));
    return data;
  }, [client, id]);
  const [tick, setTick] = useState(0);
  const [live, setLive] = useState<'off' | 'on' | 'lost'>('off');
  const [confirm, setConfirm] = useState(false);
  const [cancel, setCancel] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  const [download, setDownload] = useState<{ busy: boolean; saved?: string; error?: unknown }>({ busy: false });
  const b = batch?.id === id ? batch : null;
  const running = b !== null && !ENDED.has(b.status);

  // The live bar: the batch's own stream while it runs.
  useEffect(() => {
    if (!running) return;
    const ac = new AbortController();
    setLive('on');
    (async () => {
      try {
        for await (const e of watchBatch(client, id, ac.signal)) {
          if (ac.signal.aborted) break;
          setBatch((prev) => newer(prev, e.data));
          setTick((t) => t + 1);
        }
        setLive('off');
      } catch {
        if (!ac.signal.aborted) setLive('lost');
      }
    })();
    return () => ac.abort();
  }, [client, id, running]);

  const doCancel = async () => {
    setCancel({ busy: true });
    try {
      const { data, error, response } = await client.raw.POST('/batches/{id}/cancel', { params: { path: { id } } });
      if (!response.ok || !data) throw KilnError.from(response, error);
      setBatch((prev) => newer(prev, data));
      setTick((t) => t + 1);
      setCancel({ busy: false });
    } catch (error) {
      setCancel({ busy: false, error });
    }
    setConfirm(false);
  };
  const doDownload = async () => {
    setDownload({ busy: true });
    try {
      const bytes = await downloadResults(client, id);
      setDownload({ busy: false, saved: `Saved batch-${id}.jsonl (${size(bytes)}).` });
    } catch (error) {
      setDownload({ busy: false, error });
    }
  };

  const c = b?.requestCounts;
  const waiting = c ? c.total - ended(b!) : 0;
  return (
    <Section title="Batches" intro={<a href="#/batches">← All batches</a>}
      actions={b && (
        <>
          <button type="button" class="btn small" disabled={download.busy} onClick={doDownload}>{download.busy ? 'Downloading…' : 'Download results'}</button>
          <button type="button" class="btn danger small" disabled={!running || b.status === 'canceling' || cancel.busy} onClick={() => setConfirm(true)}>
            {b.status === 'canceling' ? 'Canceling…' : 'Cancel batch'}
          </button>
        </>
      )}>
      {load.state === 'loading' && !b && <Loading what="the batch" />}
      {load.state === 'error' && (
        <>
          <Alert error={load.error} />
          <p><button type="button" class="btn" onClick={() => go('batches')}>Back to the batches</button></p>
        </>
      )}
      {cancel.error !== undefined && <Alert error={cancel.error} />}
      {download.error !== undefined && <Alert error={download.error} />}
      {download.saved && <p class="notice ok" role="status">{download.saved}{running ? ' Lines still waiting or running are not in it yet.' : ''}</p>}
      {b && c && (
        <>
          <h2 class="page-title">Batch <code title={b.id}>{shortId(b.id)}</code> <BatchStatus status={b.status} /></h2>
          <div class="detail batch-detail" data-batch-id={b.id} data-status={b.status}>
            <div class="detail-main">
              <div class="card">
                <h2 class="card-title">Progress</h2>
                <p class="big-number batch-count"><span data-ended>{ended(b)}</span> <span class="muted">of {c.total} lines ended</span></p>
                <BatchBar b={b} big label="Batch progress" />
                <ul class="batch-legend">
                  <li><span class="swatch seg-completed" aria-hidden="true" />Completed <strong data-count="completed">{c.completed}</strong></li>
                  <li><span class="swatch seg-failed" aria-hidden="true" />Failed <strong data-count="failed">{c.failed}</strong></li>
                  <li><span class="swatch seg-canceled" aria-hidden="true" />Canceled <strong data-count="canceled">{c.canceled}</strong></li>
                  <li><span class="swatch seg-waiting" aria-hidden="true" />Waiting or running <strong data-count="waiting">{waiting}</strong></li>
                </ul>
                <p class="muted small live-note" role="status">
                  {running && live === 'on' && 'Live: the bar moves as lines end.'}
                  {running && live === 'lost' && 'The live connection was lost: reload the page to follow the batch again.'}
                  {b.status === 'completed' && 'Every line has ended. Download the results for each line\'s output or error.'}
                  {b.status === 'canceled' && 'Canceled: lines that had not started ended canceled, uncharged.'}
                  {b.status === 'expired' && 'Expired: lines not started within 24 hours ended expired, uncharged.'}
                </p>
              </div>
              <Lines client={client} batchId={b.id} tick={tick} />
            </div>
            <aside class="detail-side">
              <div class="card">
                <h2 class="card-title">Details</h2>
                <dl class="facts stacked">
                  <div><dt>Status</dt><dd><BatchStatus status={b.status} /></dd></div>
                  <div><dt>Id</dt><dd><code class="wrap">{b.id}</code></dd></div>
                  <div><dt>Spend</dt><dd data-spend>{money(b.spentMicros)}</dd></div>
                  <div><dt>Created</dt><dd>{when(b.createdAt)}</dd></div>
                  <div><dt>Started</dt><dd>{when(b.startedAt)}</dd></div>
                  <div><dt>Ended</dt><dd>{when(b.completedAt)}</dd></div>
                  <div><dt>Expires</dt><dd>{ENDED.has(b.status) ? '—' : whenMinute(b.expiresAt)}</dd></div>
                </dl>
              </div>
            </aside>
          </div>
        </>
      )}
      {confirm && b && (
        <ConfirmDialog title="Cancel this batch?" confirm="Cancel batch" dismiss="Keep running" danger busy={cancel.busy} onConfirm={doCancel} onCancel={() => setConfirm(false)}>
          <p>The {waiting} line{waiting === 1 ? '' : 's'} not yet ended stop: those waiting end canceled and are not charged, those running are canceled as a generation's Cancel does.</p>
          <p>The {c!.completed} completed line{c!.completed === 1 ? '' : 's'} keep their results and charges.</p>
        </ConfirmDialog>
      )}
    </Section>
  );
}

export function Batches({ client, id }: { client: KilnClient; id?: string }) {
  return id ? <Detail client={client} id={id} /> : <List client={client} />;
}
