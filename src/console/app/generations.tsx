// Generations: a gallery of image and code results, newest first, with filters (status, kind,
// model, end user and metadata pairs: docs/api.md, "Attribution"), kept in the URL's hash so that a
// reload or a shared link keeps them, and a detail view (request, status timeline, model, cost, end
// user and metadata, the result, download, cancel). Live: a job still running is followed over its
// event stream until it settles, its output shown as it is written (live.ts).

import { useEffect, useRef, useState } from 'preact/hooks';
import { money, noteStatus, recall, shortId, shortText, when, type Generation, type KilnClient } from './api.ts';
import { Highlighted } from './highlight.tsx';
import { NOTHING_YET, useFrameState, watchGeneration, writing, type Writing, type WritingEvent } from './live.ts';
import { Alert, Empty, go, Loading, Section, Status, useHashQuery, useLoad } from './ui.tsx';
import { WritingView } from './writing.tsx';

type Item = Generation & { type?: string; model?: string };

interface Page {
  items: Item[];
  nextCursor: string | null;
}

/** The gallery's filters: each is sent to GET /generations, and all of them must match. */
export interface Filters {
  status: string;
  type: string;
  model: string;
  /** The request's `endUser` ('' for any). */
  endUser: string;
  /** `metadata[key]=value` pairs, in the order they were added; one value per key. */
  metadata: Array<[string, string]>;
}

const NO_FILTERS: Filters = { status: '', type: '', model: '', endUser: '', metadata: [] };
const METADATA_PARAM = /^metadata\[(.+)\]$/;
// The API's rules (docs/api.md, "Attribution"), checked before a filter goes into the URL.
const METADATA_KEY = /^[A-Za-z0-9_.:-]{1,64}$/;
const MAX_PAIRS = 16;
const MAX_VALUE = 512;
const MAX_END_USER = 128;
/** What the API refuses in an end user: control characters, lone surrogates, line and paragraph separators. */
const UNPRINTABLE = /[\p{Cc}\p{Cs}\u2028\u2029]/u;
/** Length in characters (code points), as the API counts. */
const chars = (s: string) => [...s].length;

/** The filters a gallery URL names (`#/generations?status=failed&endUser=u1&metadata[project]=alpha`). */
function filtersOf(q: URLSearchParams): Filters {
  const metadata: Array<[string, string]> = [];
  for (const [name, value] of q) {
    const k = METADATA_PARAM.exec(name)?.[1];
    if (k === undefined) continue;
    const at = metadata.findIndex(([key]) => key === k);
    if (at >= 0) metadata[at] = [k, value];
    else metadata.push([k, value]);
  }
  return { status: q.get('status') ?? '', type: q.get('type') ?? '', model: q.get('model') ?? '', endUser: q.get('endUser') ?? '', metadata };
}

/** The URL (a hash) of the gallery with these filters; the empty ones are left out. */
export function galleryHref(f: Partial<Filters>): string {
  const parts: string[] = [];
  const add = (name: string, value: string | undefined) => {
    if (value) parts.push(`${name}=${encodeURIComponent(value)}`);
  };
  add('status', f.status);
  add('type', f.type);
  add('model', f.model);
  add('endUser', f.endUser);
  // Brackets kept as they are: `metadata[project]=alpha`, as the API reads it.
  for (const [k, v] of f.metadata ?? []) parts.push(`metadata[${encodeURIComponent(k)}]=${encodeURIComponent(v)}`);
  return parts.length ? `#/generations?${parts.join('&')}` : '#/generations';
}

const filtered = (f: Filters) => !!(f.status || f.type || f.model || f.endUser || f.metadata.length);

/** Why an end user cannot be a filter, or null when it can ('' is none). */
function endUserProblem(v: string): string | null {
  if (!v) return null;
  if (chars(v) > MAX_END_USER) return `End user: at most ${MAX_END_USER} characters (this one has ${chars(v)}).`;
  if (UNPRINTABLE.test(v)) return 'End user: printable characters only (no control characters).';
  return null;
}

/** A `key=value` typed into the metadata field, or why it is not one. */
function parsePair(text: string, have: Array<[string, string]>): [string, string] | string {
  const at = text.indexOf('=');
  if (at < 0) return 'Metadata: write a pair as key=value (e.g. project=alpha).';
  const k = text.slice(0, at).trim();
  const v = text.slice(at + 1);
  if (!METADATA_KEY.test(k)) return `Metadata: "${k}" is not a key (1–64 letters, digits, and _ . : -).`;
  if (chars(v) > MAX_VALUE) return `Metadata: a value has at most ${MAX_VALUE} characters (this one has ${chars(v)}).`;
  if (!have.some(([key]) => key === k) && have.length >= MAX_PAIRS) return `Metadata: at most ${MAX_PAIRS} pairs.`;
  return [k, v];
}

const SETTLED = new Set(['completed', 'failed']);

/** One page of the gallery: every filter, and the cursor of the page before (the same filters' cursor). */
async function loadPage(client: KilnClient, f: Filters, cursor: string | null, signal: AbortSignal): Promise<Page> {
  const r = await client.generations.list({
    limit: 24, ...(cursor ? { cursor } : {}), ...(f.status ? { status: f.status } : {}), ...(f.type ? { type: f.type } : {}), ...(f.model ? { model: f.model } : {}),
    ...(f.endUser ? { endUser: f.endUser } : {}), ...(f.metadata.length ? { metadata: Object.fromEntries(f.metadata) } : {}),
  }, { signal });
  return { items: r.data, nextCursor: r.nextCursor };
}

function typeOf(g: Item): string | undefined {
  return g.result?.type ?? g.type ?? recall(g.id)?.request.type;
}
function modelOf(g: Item): string | undefined {
  return g.result?.model ?? g.model ?? recall(g.id)?.request.model;
}
/** What was asked: the API's `prompt` (events recorded before it existed lack it: then this tab's memory). */
function promptOf(g: Item): string | undefined {
  return g.prompt ?? recall(g.id)?.request.prompt;
}

/**
 * A card's title: the prompt, shortened on a word boundary; the full prompt is its tooltip and
 * what a screen reader reads.
 */
function TileTitle({ g }: { g: Item }) {
  const prompt = promptOf(g);
  if (!prompt) {
    const kind = typeOf(g) === 'image' ? 'Image' : typeOf(g) === 'code' ? 'Code' : 'Generation';
    return <span class="tile-title">{kind} {shortId(g.id)}</span>;
  }
  const short = shortText(prompt, 40);
  if (short === prompt) return <span class="tile-title" title={prompt}>{prompt}</span>;
  return (
    <span class="tile-title" title={prompt}>
      <span aria-hidden="true">{short}</span>
      <span class="sr-only">{prompt}</span>
    </span>
  );
}

/**
 * Live updates. The gallery follows the account's event stream (GET /events): every generation
 * that settles — made here, by the CLI, by another app — reaches `settled`. A detail view follows
 * its own job's stream instead, which also reports `processing`.
 */
function useAccountEvents(client: KilnClient, settled: (g: Generation) => void) {
  // The stream outlives renders; it calls the latest callback (which sees the current filters).
  const latest = useRef(settled);
  latest.current = settled;
  useEffect(() => {
    const ac = new AbortController();
    (async () => {
      try {
        for await (const e of client.events.watch({ signal: ac.signal })) {
          if (e.event !== 'generation.completed' && e.event !== 'generation.failed') continue;
          const g = e.data.data as Generation;
          noteStatus(g.id, g);
          latest.current(g);
        }
      } catch {
        /* aborted, or gave up after its retries: Refresh reads the list again */
      }
    })();
    return () => ac.abort();
  }, [client]);
}

/** The job's own stream while it runs: its statuses, and what it writes (`write`, see live.ts). */
function useJob(client: KilnClient, g: Generation | null, update: (g: Generation) => void, write: (e: WritingEvent | null) => void) {
  const running = g && !SETTLED.has(g.status) ? g.id : null;
  useEffect(() => {
    if (!running) return;
    const ac = new AbortController();
    (async () => {
      try {
        for await (const e of watchGeneration(client, running, { signal: ac.signal })) {
          if (ac.signal.aborted) break;
          if (e.event !== 'status') {
            write(e);
            continue;
          }
          noteStatus(running, e.data);
          if (e.terminal) write(null);
          update(e.data);
        }
      } catch {
        /* aborted, or the stream gave up: Refresh reads it again */
      }
    })();
    return () => ac.abort();
  }, [client, running]);
}

function Thumb({ g }: { g: Item }) {
  const r = g.result;
  // The card's title names it: the picture needs no second name.
  if (r?.type === 'image' && r.url) return <img src={r.url} alt="" loading="lazy" />;
  if (r?.type === 'code' && r.code) return <pre class="thumb-code" aria-hidden="true">{r.code.slice(0, 400)}</pre>;
  if (g.status === 'failed') return <div class="thumb-empty failed" aria-hidden="true">✕</div>;
  if (!SETTLED.has(g.status)) return <div class="thumb-empty" aria-hidden="true"><span class="spinner" /></div>;
  return <div class="thumb-empty" aria-hidden="true">—</div>;
}

/**
 * The filter bar: status, kind and model (applied as chosen), an end user and `key=value` metadata
 * pairs (applied with Enter or Filter; each pair then a chip that removes it). Every change is a
 * new URL (`navigate`): the URL is what the gallery shows.
 */
function FilterBar({ client, filters, navigate }: { client: KilnClient; filters: Filters; navigate: (f: Filters) => void }) {
  const [models] = useLoad((signal) => client.models.list({ signal }), [client]);
  const [endUser, setEndUser] = useState(filters.endUser);
  const [pair, setPair] = useState('');
  const [problem, setProblem] = useState<string | null>(null);
  // A link or Back changed the end user: the field shows it (a draft of another field is kept).
  useEffect(() => setEndUser(filters.endUser), [filters.endUser]);
  const set = (k: 'status' | 'type' | 'model') => (e: Event) => navigate({ ...filters, [k]: (e.target as HTMLSelectElement).value });
  const apply = (e: Event) => {
    e.preventDefault();
    const user = endUser.trim();
    const bad = endUserProblem(user);
    if (bad) return setProblem(bad);
    let metadata = filters.metadata;
    if (pair.trim()) {
      const p = parsePair(pair.trim(), metadata);
      if (typeof p === 'string') return setProblem(p);
      metadata = metadata.some(([k]) => k === p[0]) ? metadata.map((m) => (m[0] === p[0] ? p : m)) : [...metadata, p];
    }
    setProblem(null);
    setPair('');
    navigate({ ...filters, endUser: user, metadata });
  };
  return (
    <form class="filter-bar" onSubmit={apply} aria-label="Filters" noValidate>
      <div class="filters">
        <label>Status
          <select value={filters.status} onChange={set('status')}>
            <option value="">Any</option>
            {['pending', 'processing', 'completed', 'failed'].map((s) => <option key={s} value={s}>{s}</option>)}
          </select>
        </label>
        <label>Kind
          <select value={filters.type} onChange={set('type')}>
            <option value="">Any</option><option value="image">Image</option><option value="code">Code</option>
          </select>
        </label>
        <label>Model
          <select value={filters.model} onChange={set('model')}>
            <option value="">Any</option>
            {models.state === 'ok' && models.value.data.map((m) => <option key={m.id} value={m.id}>{m.id}</option>)}
            {/* A model from the URL that the catalog no longer lists still shows as chosen. */}
            {filters.model && models.state === 'ok' && !models.value.data.some((m) => m.id === filters.model) && <option value={filters.model}>{filters.model}</option>}
          </select>
        </label>
        <label>End user
          <input type="search" value={endUser} autoComplete="off" spellcheck={false} placeholder="Any" aria-describedby={problem ? 'filter-problem' : undefined}
            onInput={(e) => setEndUser((e.target as HTMLInputElement).value)} />
        </label>
        <label>Metadata
          <input type="text" value={pair} autoComplete="off" spellcheck={false} placeholder="key=value" aria-describedby={problem ? 'filter-problem' : 'filter-pair-hint'}
            onInput={(e) => setPair((e.target as HTMLInputElement).value)} />
        </label>
        <div class="filter-apply"><button type="submit" class="btn small">Filter</button></div>
      </div>
      <p class="sr-only" id="filter-pair-hint">A metadata pair as key=value; each one added must match too.</p>
      {problem && <p id="filter-problem" class="notice error" role="alert">{problem}</p>}
      {(filters.metadata.length > 0 || filtered(filters)) && (
        <div class="row chips-row">
          {filters.metadata.length > 0 && (
            <ul class="chips" aria-label="Metadata filters">
              {filters.metadata.map(([k, v]) => (
                <li key={k} class="chip" data-key={k}>
                  <span class="chip-text"><code>{k}</code>=<span>{v}</span></span>
                  <button type="button" class="chip-remove" aria-label={`Remove the filter ${k}=${v}`} title="Remove"
                    onClick={() => navigate({ ...filters, metadata: filters.metadata.filter(([key]) => key !== k) })}>×</button>
                </li>
              ))}
            </ul>
          )}
          <a class="btn ghost small" href={galleryHref(NO_FILTERS)}>Clear filters</a>
        </div>
      )}
    </form>
  );
}

function Gallery({ client }: { client: KilnClient }) {
  const query = useHashQuery();
  const filters = filtersOf(query);
  // What the gallery shows is what its URL says: one string for the filters, the loads' key.
  const key = galleryHref(filters);
  const shown = useRef(key);
  shown.current = key;
  const navigate = (f: Filters) => {
    location.hash = galleryHref(f);
  };
  // The pages read, with the filters they answer: another filter's pages (and cursor) are never shown.
  const [read, setRead] = useState<{ key: string; pages: Page[] }>({ key: '', pages: [] });
  const setPages = (f: (ps: Page[]) => Page[]) => setRead((r) => (r.key === key ? { ...r, pages: f(r.pages) } : r));
  const [load, reload] = useLoad(async (signal) => {
    const p = await loadPage(client, filters, null, signal);
    setRead({ key, pages: [p] });
    return p;
  }, [client, key]);
  const [more, setMore] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  useEffect(() => setMore({ busy: false }), [key]);
  const current = read.key === key;
  const pages = current ? read.pages : [];
  const items = pages.flatMap((p) => p.items);
  const last = pages[pages.length - 1];
  const fitsFilters = (g: Item) => (!filters.status || g.status === filters.status) && (!filters.type || typeOf(g) === filters.type) && (!filters.model || modelOf(g) === filters.model)
    && (!filters.endUser || g.endUser === filters.endUser) && filters.metadata.every(([k, v]) => g.metadata?.[k] === v);
  useAccountEvents(client, (g) => setPages((ps) => {
    if (!ps.length) return ps;
    if (ps.some((p) => p.items.some((i) => i.id === g.id))) return ps.map((p) => ({ ...p, items: p.items.map((i) => (i.id === g.id ? { ...i, ...g } : i)) }));
    return fitsFilters(g) ? [{ ...ps[0]!, items: [g, ...ps[0]!.items] }, ...ps.slice(1)] : ps;
  }));

  return (
    <Section title="Generations" intro="Every image and code result of this key's billing scope, newest first."
      actions={<><button type="button" class="btn ghost small" onClick={reload}>Refresh</button><a class="btn primary small" href="#/playground">New generation</a></>}>
      <FilterBar client={client} filters={filters} navigate={navigate} />
      {/* data-filters: the URL (hash) of the filters whose answer is shown. */}
      <div class="gallery-results" data-filters={current ? key : undefined} aria-busy={current ? undefined : 'true'}>
        {(load.state === 'loading' || (load.state === 'ok' && !current)) && <Loading what="generations" />}
        {load.state === 'error' && <Alert error={load.error} />}
        {load.state === 'ok' && current && items.length === 0 && (filtered(filters)
          ? <Empty title="No generations match these filters"><a href={galleryHref(NO_FILTERS)}>Clear filters</a> to see every generation.</Empty>
          : <Empty title="No generations yet">Try one in the <a href="#/playground">Playground</a>.</Empty>)}
        {items.length > 0 && (
          <ul class="gallery" aria-label="Generations">
            {items.map((g) => (
              <li key={g.id} class="tile" data-generation-id={g.id} data-status={g.status}>
                <a href={`#/generations/${g.id}`} class="tile-link">
                  <div class="tile-media"><Thumb g={g} /></div>
                  <div class="tile-meta">
                    <TileTitle g={g} />
                    <span class="tile-sub"><Status status={g.status} /> <span class="cost">{g.result ? money(g.result.costMicros) : ''}</span></span>
                    <span class="tile-sub muted"><span class="tile-model">{modelOf(g) ?? ''}</span> <code class="tile-id" title={g.id}>{shortId(g.id)}</code></span>
                  </div>
                </a>
              </li>
            ))}
          </ul>
        )}
        {last?.nextCursor && (
          <div class="center">
            <button type="button" class="btn" disabled={more.busy} onClick={async () => {
              // The next page of these filters: dropped if the filters change while it loads.
              const asked = key;
              setMore({ busy: true });
              try {
                const p = await loadPage(client, filters, last.nextCursor, new AbortController().signal);
                if (shown.current !== asked) return;
                setRead((r) => (r.key === asked ? { ...r, pages: [...r.pages, p] } : r));
                setMore({ busy: false });
              } catch (error) {
                if (shown.current === asked) setMore({ busy: false, error });
              }
            }}>{more.busy ? 'Loading…' : 'Load more'}</button>
            {more.error !== undefined && <Alert error={more.error} />}
          </div>
        )}
      </div>
    </Section>
  );
}

/** A generation's end user and metadata, each a link to the gallery filtered by it. */
function Attribution({ g }: { g: Item }) {
  const pairs = Object.entries(g.metadata ?? {});
  if (g.endUser === undefined && !pairs.length) return null;
  return (
    <>
      {g.endUser !== undefined && (
        <div><dt>End user</dt><dd><a class="end-user" href={galleryHref({ endUser: g.endUser })} title="Show this end user's generations">{g.endUser}</a></dd></div>
      )}
      {pairs.length > 0 && (
        <div><dt>Metadata</dt><dd>
          <ul class="chips" aria-label="Metadata">
            {pairs.map(([k, v]) => (
              <li key={k} class="chip" data-key={k}>
                <a class="chip-text" href={galleryHref({ metadata: [[k, v]] })} title={`Show the generations tagged ${k}=${v}`}><code>{k}</code>=<span>{v}</span></a>
              </li>
            ))}
          </ul>
        </dd></div>
      )}
    </>
  );
}

function Detail({ client, id }: { client: KilnClient; id: string }) {
  const [load, reload, set] = useLoad((signal) => client.generations.get(id, { signal }), [client, id]);
  const [cancel, setCancel] = useState<{ busy: boolean; error?: unknown }>({ busy: false });
  // Another generation's answer (the view before, while this one's loads) is not shown under this id.
  const g = load.state === 'ok' && load.value.id === id ? (load.value as Item) : null;
  const local = recall(id);
  // What it has written while it runs (opened part-way: the text so far comes first), once a frame.
  const [live, updateLive, setLive] = useFrameState<Writing | null>(null);
  useEffect(() => setLive(null), [id]);
  useJob(client, g, (next) => next.id === id && set(next), (e) => (e ? updateLive((w) => writing(w ?? NOTHING_YET, e)) : setLive(null)));
  const timeline = local?.seen ?? (g ? [{ status: g.status, at: '' }] : []);
  const r = g?.result;
  const ext = r?.type === 'code' ? ({ tsx: 'tsx', jsx: 'jsx', css: 'css', svg: 'svg', json: 'json', typescript: 'ts', javascript: 'js', mdx: 'mdx', markdown: 'md', glsl: 'glsl' } as Record<string, string>)[local?.request.targetLanguage ?? ''] ?? 'txt' : 'png';
  const [codeUrl, setCodeUrl] = useState<string | null>(null);
  useEffect(() => {
    if (r?.type !== 'code' || !r.code) return;
    const u = URL.createObjectURL(new Blob([r.code], { type: 'text/plain' }));
    setCodeUrl(u);
    return () => URL.revokeObjectURL(u);
  }, [r?.type === 'code' ? r.code : null]);

  return (
    <Section title="Generations" intro={<a href="#/generations">← All generations</a>}
      actions={g && !SETTLED.has(g.status) ? (
        <button type="button" class="btn danger small" disabled={cancel.busy} onClick={async () => {
          setCancel({ busy: true });
          try {
            await client.generations.cancel(id);
            setCancel({ busy: false });
            reload();
          } catch (error) {
            setCancel({ busy: false, error });
          }
        }}>Cancel generation</button>
      ) : undefined}>
      {cancel.error !== undefined && <Alert error={cancel.error} />}
      {(load.state === 'loading' || (load.state === 'ok' && !g)) && <Loading what="the generation" />}
      {load.state === 'error' && <Alert error={load.error} />}
      {g && (
        <div class="detail">
          <div class="detail-main card">
            <h2 class="card-title">Result</h2>
            {r?.type === 'image' && r.url && <img class="result-image" src={r.url} alt={promptOf(g) ?? `Generated image ${shortId(id)}`} />}
            {r?.type === 'code' && r.code !== null && <Highlighted code={r.code} />}
            {!r && g.status === 'failed' && <div class="notice error">{g.error ?? 'Failed.'}</div>}
            {!r && !SETTLED.has(g.status) && (
              <WritingView w={live} alt={promptOf(g) ?? `image ${shortId(id)}`} code={typeOf(g) === 'code' || g.partial?.text !== undefined}
                empty={<p class="muted" role="status"><span class="spinner" aria-hidden="true" /> {g.status}…</p>} />
            )}
            {r && (
              <div class="row">
                {r.type === 'image' && r.url && <a class="btn small" href={r.url} download={`${id}.${ext}`}>Download image</a>}
                {r.type === 'code' && codeUrl && <a class="btn small" href={codeUrl} download={`${id}.${ext}`}>Download code</a>}
              </div>
            )}
          </div>
          <aside class="detail-side">
            <div class="card">
              <h2 class="card-title">Details</h2>
              <dl class="facts stacked">
                <div><dt>Status</dt><dd><Status status={g.status} /></dd></div>
                <div><dt>Id</dt><dd><code class="wrap">{id}</code></dd></div>
                <div><dt>Model</dt><dd>{modelOf(g) ?? '—'}</dd></div>
                <div><dt>Cost</dt><dd>{r ? money(r.costMicros) : g.status === 'failed' ? '$0 (not charged)' : '—'}</dd></div>
                {r?.type === 'image' && <div><dt>Aspect ratio</dt><dd>{r.aspectRatio}</dd></div>}
                <Attribution g={g} />
                {g.error && <div><dt>Error</dt><dd>{g.error}</dd></div>}
              </dl>
            </div>
            <div class="card">
              <h2 class="card-title">Timeline</h2>
              <ol class="timeline">
                {timeline.map((t) => <li key={t.status}><Status status={t.status} /> <span class="muted">{t.at ? when(t.at) : ''}</span></li>)}
              </ol>
            </div>
            <div class="card">
              <h2 class="card-title">Request</h2>
              {local ? (
                <dl class="facts stacked">
                  <div><dt>Type</dt><dd>{local.request.type}</dd></div>
                  <div><dt>Prompt</dt><dd class="prompt">{local.request.prompt}</dd></div>
                  {local.request.aspectRatio && <div><dt>Aspect ratio</dt><dd>{local.request.aspectRatio}</dd></div>}
                  {local.request.targetLanguage && <div><dt>Language</dt><dd>{local.request.targetLanguage}</dd></div>}
                  <div><dt>Created</dt><dd>{when(local.createdAt)}</dd></div>
                </dl>
              ) : promptOf(g) ? <p class="prompt">{promptOf(g)}</p> : <p class="muted">The request is not part of the generation's public record.</p>}
            </div>
          </aside>
        </div>
      )}
      {load.state === 'error' && <p><button type="button" class="btn" onClick={() => go('generations')}>Back to the gallery</button></p>}
    </Section>
  );
}

export function Generations({ client, id }: { client: KilnClient; id?: string }) {
  return id ? <Detail client={client} id={id} /> : <Gallery client={client} />;
}

