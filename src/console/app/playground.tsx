// Playground: pick a type and a model (with its billed price), write a prompt, Generate — then the
// job's live status from its event stream, its output as it is written (code, previews, progress:
// live.ts), and the result.

import { useEffect, useRef, useState } from 'preact/hooks';
import { money, noteStatus, remember, shortId, type Generation, type GenerationRequest, type KilnClient } from './api.ts';
import { Highlighted } from './highlight.tsx';
import { NOTHING_YET, useFrameState, watchGeneration, writing, type Writing } from './live.ts';
import { WritingView } from './writing.tsx';
import { Alert, Loading, Section, Status, useLoad } from './ui.tsx';

type Model = Awaited<ReturnType<KilnClient['models']['list']>>['data'][number];

const ASPECTS = ['1:1', '16:9', '9:16', '4:3', '3:4', '3:2', '2:3'] as const;
const LANGUAGES = ['tsx', 'jsx', 'typescript', 'javascript', 'css', 'svg', 'json', 'markdown', 'mdx', 'glsl', 'text'] as const;

/** A model's billed prices in words, one per unit billed. */
export function priceParts(m: Model): string[] {
  return pricingParts(m.pricing);
}

/** A price table (`pricing`, `batchPrice`) in words, one per unit billed. */
export function pricingParts(p: Model['pricing']): string[] {
  if (!p) return ['price unknown'];
  const parts: string[] = [];
  if (p.micros_per_image !== undefined) parts.push(`${money(p.micros_per_image)} / image`);
  if (p.micros_per_second !== undefined) parts.push(`${money(p.micros_per_second)} / s`);
  if (p.input_micros_per_token !== undefined) parts.push(`${money(p.input_micros_per_token * 1000)} / 1K in`);
  if (p.output_micros_per_token !== undefined) parts.push(`${money(p.output_micros_per_token * 1000)} / 1K out`);
  return parts.length ? parts : ['free'];
}

const fits = (m: Model, type: 'image' | 'code') => (type === 'image' ? m.category === 'image' : m.category === 'text' || m.category === 'svg');

export function Playground({ client }: { client: KilnClient }) {
  const [models] = useLoad((signal) => client.models.list({ signal }), [client]);
  const [type, setType] = useState<'image' | 'code'>('image');
  const [model, setModel] = useState('');
  const [prompt, setPrompt] = useState('');
  const [aspect, setAspect] = useState<(typeof ASPECTS)[number]>('1:1');
  const [lang, setLang] = useState<(typeof LANGUAGES)[number]>('tsx');
  // The job shown, with the type it was asked for (the type field may have changed since).
  const [job, setJob] = useState<{ id: string; type: 'image' | 'code'; state: Generation | { id: string; status: 'pending' }; started: number; ended?: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  // What the running job has written so far (null: nothing yet), rendered once a frame.
  const [live, updateLive, setLive] = useFrameState<Writing | null>(null);
  const watch = useRef<AbortController | null>(null);
  useEffect(() => () => watch.current?.abort(), []);

  const choices = models.state === 'ok' ? models.value.data.filter((m) => fits(m, type)) : [];
  // A model of the chosen type: the one picked if it is one (read when the effect runs, after
  // the render: a pick made in between is kept, not replaced by the first choice).
  useEffect(() => {
    if (choices.length) setModel((picked) => (choices.some((m) => m.id === picked) ? picked : choices[0]!.id));
  }, [type, models.state]);

  const submit = async (e: Event) => {
    e.preventDefault();
    setError(null);
    if (!prompt.trim()) {
      setError(new Error('Write a prompt first.'));
      return;
    }
    watch.current?.abort();
    const ac = new AbortController();
    watch.current = ac;
    const body: GenerationRequest = type === 'image'
      ? { type, prompt, model: model || undefined, aspectRatio: aspect }
      : { type, prompt, model: model || undefined, targetLanguage: lang };
    setBusy(true);
    setLive(null);
    try {
      const accepted = await client.generations.create(body);
      remember({ id: accepted.id, request: body, createdAt: new Date().toISOString(), seen: [{ status: 'pending', at: new Date().toISOString() }] });
      const started = performance.now();
      setJob({ id: accepted.id, type: body.type as 'image' | 'code', state: accepted, started });
      setBusy(false);
      for await (const ev of watchGeneration(client, accepted.id, { signal: ac.signal })) {
        if (ac.signal.aborted) break;
        if (ev.event !== 'status') {
          updateLive((w) => writing(w ?? NOTHING_YET, ev));
          continue;
        }
        noteStatus(accepted.id, ev.data);
        // The result replaces what was streamed (it may differ: fences are stripped).
        if (ev.terminal) setLive(null);
        setJob({ id: accepted.id, type: body.type as 'image' | 'code', state: ev.data, started, ended: ev.terminal ? performance.now() : undefined });
      }
    } catch (err) {
      if (!ac.signal.aborted) setError(err);
    } finally {
      setBusy(false);
    }
  };

  const g = job?.state as Generation | undefined;
  const r = g?.result ?? null;
  const chosen = choices.find((m) => m.id === model);
  return (
    <Section title="Playground" intro="Try a model. Each run is a real generation, billed like any API call.">
      <div class="playground">
        <form class="card form" onSubmit={submit}>
          <div class="field-row">
            <div class="field">
              <label for="pg-type">Type</label>
              <select id="pg-type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value as 'image' | 'code')}>
                <option value="image">Image</option>
                <option value="code">Code</option>
              </select>
            </div>
            {type === 'image' ? (
              <div class="field">
                <label for="pg-aspect">Aspect ratio</label>
                <select id="pg-aspect" value={aspect} onChange={(e) => setAspect((e.target as HTMLSelectElement).value as typeof aspect)}>
                  {ASPECTS.map((a) => <option key={a} value={a}>{a}</option>)}
                </select>
              </div>
            ) : (
              <div class="field">
                <label for="pg-lang">Language</label>
                <select id="pg-lang" value={lang} onChange={(e) => setLang((e.target as HTMLSelectElement).value as typeof lang)}>
                  {LANGUAGES.map((l) => <option key={l} value={l}>{l}</option>)}
                </select>
              </div>
            )}
          </div>
          <div class="field">
            <label for="pg-model">Model</label>
            {models.state === 'loading' && <Loading what="models" />}
            {models.state === 'error' && <Alert error={models.error} />}
            <select id="pg-model" aria-describedby="pg-model-hint" value={model} onChange={(e) => setModel((e.target as HTMLSelectElement).value)} disabled={models.state !== 'ok'}>
              {/* The name alone: with its id and price a label outgrew the field and was cut off. */}
              {choices.map((m) => <option key={m.id} value={m.id}>{m.name}</option>)}
            </select>
            {chosen && (
              <p class="hint" id="pg-model-hint">
                <code>{chosen.id}</code> · billed {priceParts(chosen).map((p, i) => <>{i > 0 && ' · '}<span class="nowrap">{p}</span></>)}
                {chosen.provider === 'local' ? '. Offline development model: deterministic, no network.' : ''}
              </p>
            )}
          </div>
          <div class="field">
            <label for="pg-prompt">Prompt</label>
            <textarea id="pg-prompt" rows={5} value={prompt} placeholder={type === 'image' ? 'A kiln at dusk, warm light, flat illustration' : 'A pricing card with three tiers'}
              onInput={(e) => setPrompt((e.target as HTMLTextAreaElement).value)} />
          </div>
          {error !== null && <Alert error={error} />}
          <div class="row">
            <button class="btn primary" type="submit" disabled={busy || models.state !== 'ok'}>{busy ? 'Starting…' : 'Generate'}</button>
          </div>
        </form>
        <div class="card output" aria-live="polite">
          <h2 class="card-title">Output</h2>
          {!job && <p class="muted">The result appears here.</p>}
          {job && (
            <>
              <p class="run-status" role="status">
                <Status status={job.state.status} /> <a href={`#/generations/${job.id}`}>{shortId(job.id)}</a>
                {job.ended !== undefined && <span class="muted"> in {((job.ended - job.started) / 1000).toFixed(1)} s</span>}
                {r && <span class="cost"> · {money(r.costMicros)}</span>}
              </p>
              {!r && job.state.status !== 'failed' && (
                <WritingView w={live} alt={prompt || 'the image'} code={job.type === 'code'}
                  empty={<div class="placeholder"><span class="spinner" aria-hidden="true" /></div>} />
              )}
              {g?.status === 'failed' && <div class="notice error">{g.error}</div>}
              {r?.type === 'image' && r.url && <img class="result-image" src={r.url} alt={prompt || 'Generated image'} />}
              {r?.type === 'code' && r.code !== null && <Highlighted code={r.code} />}
            </>
          )}
        </div>
      </div>
    </Section>
  );
}
