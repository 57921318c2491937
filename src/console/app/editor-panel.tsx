// The workflow editor's side panel (the region named Node, or Edge when an edge is selected): the
// fields of the selected node (docs/console.md, "The workflow editor"), each with the problems a
// refused save placed on it, the node's edges, and the image picker (GET /generations).

import { useState } from 'preact/hooks';
import { shortText, type KilnClient } from './api.ts';
import { priceParts } from './playground.tsx';
import {
  ASPECT_RATIOS, edgeKey, FITTING, KIND_NAME, LANGUAGES, nodeName, OUTPUT_TYPES, PLATFORMS,
  type Doc, type DocNode, type OutputType, type Problems,
} from './workflow-doc.ts';
import type { Selection } from './editor-canvas.tsx';
import { Alert, Loading, useLoad } from './ui.tsx';

export type Model = Awaited<ReturnType<KilnClient['models']['list']>>['data'][number];

/** Field ids of the panel, by the field a validation pointer names. */
const FIELD_ID: Record<string, string> = { text: 'nf-text', url: 'nf-url', output: 'nf-output', prompt: 'nf-prompt', model: 'nf-model', label: 'nf-label', aspectRatio: 'nf-aspect', targetLanguage: 'nf-lang', platform: 'nf-platform' };

function FieldProblem({ id, problems, field }: { id: string; problems: Array<{ field: string; message: string }>; field: string }) {
  const mine = problems.filter((p) => p.field === field);
  if (!mine.length) return null;
  return <p class="field-problem" id={`${id}-problem`}>{mine.map((p) => p.message).join('; ')}</p>;
}

function ImagePicker({ client, onPick, current }: { client: KilnClient; onPick: (url: string, preview: string) => void; current: string }) {
  const [open, setOpen] = useState(false);
  return (
    <div class="picker">
      <button type="button" class="btn small ghost" aria-expanded={open} aria-controls="image-picker" onClick={() => setOpen(!open)}>
        {open ? 'Hide your images' : 'Choose from your images'}
      </button>
      {open && <ImageGrid client={client} onPick={onPick} current={current} />}
    </div>
  );
}

/** The URL an image node keeps for a generated image: its store URL without the signature (the server resolves it to the owner's store path). */
export const storeUrl = (signed: string) => {
  try {
    const u = new URL(signed);
    return `${u.origin}${u.pathname}`;
  } catch {
    return signed;
  }
};

function ImageGrid({ client, onPick, current }: { client: KilnClient; onPick: (url: string, preview: string) => void; current: string }) {
  const [list] = useLoad((signal) => client.generations.list({ type: 'image', status: 'completed', limit: 24 }, { signal }), [client]);
  const images = list.state === 'ok'
    ? list.value.data.flatMap((g) => (g.result?.type === 'image' && g.result.url ? [{ id: g.id, url: g.result.url, prompt: g.prompt }] : []))
    : [];
  return (
    <div id="image-picker">
      {list.state === 'loading' && <Loading what="your images" />}
      {list.state === 'error' && <Alert error={list.error} />}
      {list.state === 'ok' && images.length === 0 && <p class="muted small">No generated images yet: make one in the Playground.</p>}
      {images.length > 0 && (
        <ul class="picker-grid" aria-label="Your generated images">
          {images.map((im) => {
            const url = storeUrl(im.url);
            const name = im.prompt ? shortText(im.prompt, 60) : `image ${im.id.slice(-8)}`;
            return (
              <li key={im.id}>
                <button type="button" class="picker-item" aria-pressed={current === url} aria-label={`Use image: ${name}`} title={name} onClick={() => onPick(url, im.url)}>
                  <img src={im.url} alt="" loading="lazy" />
                </button>
              </li>
            );
          })}
        </ul>
      )}
    </div>
  );
}

function NodePanel({ node, doc, models, problems, client, onChange, onPickEdge, onImage }: {
  node: DocNode; doc: Doc; models: Model[] | null; problems: Array<{ field: string; message: string }>; client: KilnClient;
  onChange: (patch: Partial<DocNode>, field: string) => void; onPickEdge: (key: string) => void; onImage: (url: string, preview: string) => void;
}) {
  const described = (field: string, hint?: string) => {
    const ids = [problems.some((p) => p.field === field) ? `${FIELD_ID[field]}-problem` : '', hint ?? ''].filter(Boolean).join(' ');
    return { 'aria-invalid': problems.some((p) => p.field === field) || undefined, 'aria-describedby': ids || undefined };
  };
  const value = (e: Event) => (e.target as HTMLInputElement).value;
  const output = (node.output ?? 'image') as OutputType;
  const fitting = models?.filter((m) => FITTING[output].includes(m.category)) ?? [];
  const chosen = models?.find((m) => m.id === node.model);
  const inputs = doc.edges.filter((e) => e.to === node.id);
  const outputs = doc.edges.filter((e) => e.from === node.id);
  const byId = new Map(doc.nodes.map((n) => [n.id, n]));
  const general = problems.filter((p) => !FIELD_ID[p.field]);
  return (
    <>
      <p class="panel-sub"><span class="badge">{KIND_NAME[node.kind]}</span> <code>{node.id}</code></p>
      {general.length > 0 && <p class="field-problem">{general.map((p) => p.message).join('; ')}</p>}
      {node.kind === 'text' && (
        <div class="field">
          <label for="nf-text">Text</label>
          <textarea id="nf-text" rows={5} value={node.text ?? ''} onInput={(e) => onChange({ text: value(e) }, 'text')} {...described('text')} />
          <FieldProblem id="nf-text" field="text" problems={problems} />
        </div>
      )}
      {node.kind === 'image' && (
        <div class="field">
          <label for="nf-url">Image URL</label>
          <input id="nf-url" type="text" inputMode="url" spellcheck={false} autoComplete="off" value={node.url ?? ''} placeholder="https://…, seed/…, or pick one below"
            onInput={(e) => onChange({ url: value(e) }, 'url')} {...described('url', 'nf-url-hint')} />
          <FieldProblem id="nf-url" field="url" problems={problems} />
          <p class="hint" id="nf-url-hint">An https:// URL, a data: URI, a seed/… path, or one of your generated images.</p>
          <ImagePicker client={client} current={node.url ?? ''} onPick={onImage} />
        </div>
      )}
      {node.kind === 'prompt' && (
        <>
          <div class="field">
            <label for="nf-output">Output type</label>
            <select id="nf-output" value={output} onChange={(e) => {
              const next = value(e) as OutputType;
              const fits = models?.filter((m) => FITTING[next].includes(m.category)) ?? [];
              const keep = node.model && fits.some((m) => m.id === node.model);
              onChange({ output: next, model: next === 'video' ? undefined : keep ? node.model : fits[0]?.id, ...(next === 'code' && !node.targetLanguage ? { targetLanguage: 'tsx' } : {}) }, 'output');
            }} {...described('output')}>
              {OUTPUT_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
            </select>
            <FieldProblem id="nf-output" field="output" problems={problems} />
          </div>
          <div class="field">
            <label for="nf-prompt">Prompt</label>
            <textarea id="nf-prompt" rows={5} value={node.prompt ?? ''} onInput={(e) => onChange({ prompt: value(e) }, 'prompt')} {...described('prompt')} />
            <FieldProblem id="nf-prompt" field="prompt" problems={problems} />
          </div>
          <div class="field">
            <label for="nf-model">Model</label>
            {models === null && <Loading what="models" />}
            <select id="nf-model" value={node.model ?? ''} disabled={output === 'video' || models === null} onChange={(e) => onChange({ model: value(e) || undefined }, 'model')}
              {...described('model', 'nf-model-hint')}>
              {output === 'video' && <option value="">None: video outputs are skipped</option>}
              {output !== 'video' && (node.model === undefined || !fitting.some((m) => m.id === node.model)) && (
                <option value={node.model ?? ''}>{node.model ? `${node.model} (cannot make ${output})` : 'Default model'}</option>
              )}
              {output !== 'video' && fitting.map((m) => <option key={m.id} value={m.id}>{m.name} · {priceParts(m).join(' · ')}</option>)}
            </select>
            <FieldProblem id="nf-model" field="model" problems={problems} />
            <p class="hint" id="nf-model-hint">
              {output === 'video' ? 'Video prompts are skipped when the workflow runs.'
                : chosen ? <><code>{chosen.id}</code> · billed {priceParts(chosen).join(' · ')}</>
                : `Models that can make ${output} output, with the price you are billed.`}
            </p>
          </div>
          {output === 'image' && (
            <div class="field">
              <label for="nf-aspect">Aspect ratio</label>
              <select id="nf-aspect" value={node.aspectRatio ?? ''} onChange={(e) => onChange({ aspectRatio: value(e) || undefined }, 'aspectRatio')} {...described('aspectRatio')}>
                <option value="">Model default</option>
                {ASPECT_RATIOS.map((a) => <option key={a} value={a}>{a}</option>)}
              </select>
            </div>
          )}
          {output === 'code' && (
            <div class="field">
              <label for="nf-lang">Language</label>
              <select id="nf-lang" value={node.targetLanguage ?? ''} onChange={(e) => onChange({ targetLanguage: value(e) || undefined }, 'targetLanguage')} {...described('targetLanguage')}>
                <option value="">Model default</option>
                {LANGUAGES.map((l) => <option key={l} value={l}>{l}</option>)}
              </select>
            </div>
          )}
        </>
      )}
      <div class="field">
        <label for="nf-label">Label</label>
        <input id="nf-label" type="text" autoComplete="off" value={node.label ?? ''} placeholder={node.id} onInput={(e) => onChange({ label: value(e) }, 'label')}
          {...described('label', 'nf-label-hint')} />
        <FieldProblem id="nf-label" field="label" problems={problems} />
        <p class="hint" id="nf-label-hint">{node.kind === 'output' ? 'Names this result in runs.' : 'Names the node on the canvas and for the prompts it feeds.'}</p>
      </div>
      {node.kind === 'output' && (
        <div class="field">
          <label for="nf-platform">Platform</label>
          <select id="nf-platform" value={node.platform ?? ''} onChange={(e) => onChange({ platform: value(e) || undefined }, 'platform')} {...described('platform')}>
            <option value="">None</option>
            {PLATFORMS.map((p) => <option key={p} value={p}>{p}</option>)}
          </select>
        </div>
      )}
      {(inputs.length > 0 || outputs.length > 0) && (
        <div class="connections">
          <h3 class="small-title">Edges</h3>
          <ul>
            {inputs.map((e) => <li key={edgeKey(e)}><button type="button" class="linkish" onClick={() => onPickEdge(edgeKey(e))}>from {nodeName(byId.get(e.from) ?? { id: e.from })}</button></li>)}
            {outputs.map((e) => <li key={edgeKey(e)}><button type="button" class="linkish" onClick={() => onPickEdge(edgeKey(e))}>to {nodeName(byId.get(e.to) ?? { id: e.to })}</button></li>)}
          </ul>
        </div>
      )}
    </>
  );
}

/** The panel: the selected node's fields, the selected edge, or how to select one. */
export function SidePanel({ doc, selection, models, problems, client, onUpdateNode, onSelect, onImage }: {
  doc: Doc; selection: Selection; models: Model[] | null; problems: Problems; client: KilnClient;
  onUpdateNode: (nodeId: string, patch: Partial<DocNode>, field: string) => void;
  onSelect: (s: Selection) => void;
  onImage: (nodeId: string, url: string, preview: string) => void;
}) {
  const selectedNode = selection?.type === 'node' ? doc.nodes.find((n) => n.id === selection.id) : undefined;
  const selectedEdge = selection?.type === 'edge' ? doc.edges.find((e) => edgeKey(e) === selection.id) : undefined;
  const names = new Map(doc.nodes.map((n) => [n.id, nodeName(n)]));
  return (
    <section class="card editor-panel" aria-labelledby="panel-title">
      <h2 class="card-title" id="panel-title">{selectedEdge ? 'Edge' : 'Node'}</h2>
      {selectedNode && (
        <NodePanel key={selectedNode.id} node={selectedNode} doc={doc} models={models} problems={problems.nodes.get(selectedNode.id) ?? []} client={client}
          onChange={(patch, field) => onUpdateNode(selectedNode.id, patch, field)}
          onPickEdge={(key) => onSelect({ type: 'edge', id: key })}
          onImage={(url, preview) => onImage(selectedNode.id, url, preview)} />
      )}
      {selectedEdge && (
        <>
          <p>From <strong>{names.get(selectedEdge.from)}</strong> to <strong>{names.get(selectedEdge.to)}</strong>.</p>
          {problems.edges.get(edgeKey(selectedEdge))?.map((m, i) => <p key={i} class="field-problem">{m}</p>)}
          <p class="muted small">Delete removes it. Select a node to edit it.</p>
        </>
      )}
      {!selection && <p class="muted">Select a node on the canvas (click it, or Tab to it and press Enter) to edit it here, or add one with Add node.</p>}
    </section>
  );
}
