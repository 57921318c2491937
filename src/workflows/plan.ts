// Turns a validated graph into the run's execution units: one per prompt → output edge (each is one
// result, one provider call and one charge), with its inputs, dependency count and dependents.

import type { CatalogModel } from '../billing/catalog.ts';
import type { AspectRatio, TargetLanguage } from '../providers/types.ts';
import type { OutputType, Platform, PromptNodeValue } from './graph.ts';
import type { ValidGraph } from './validate.ts';

export type UnitInput =
  | { kind: 'text'; from: string; label: string; content: string; language?: string }
  | { kind: 'image'; from: string; label: string; url: string; mediaType?: string }
  /** The value of output node `from` in this run, known once its unit completes. */
  | { kind: 'ref'; from: string; label: string; language?: string };

/** Everything a worker needs to run a unit: fixed at run start, never re-read from the workflow. */
export interface UnitSpec {
  promptNodeId: string;
  outputNodeId: string;
  type: OutputType;
  prompt: string;
  /** The catalog entry as it was at run start (null for video, which is skipped). */
  model: CatalogModel | null;
  /** Entries tried when `model`'s upstream fails (as at run start); those unable to take the unit's images are dropped when it runs. */
  fallbacks?: CatalogModel[];
  aspectRatio: AspectRatio;
  targetLanguage: TargetLanguage;
  screenHtml: boolean;
  label?: string;
  platform?: Platform;
  inputs: UnitInput[];
  /** W3C traceparent of the request that started the run (tracing on only): each output's job joins that trace. */
  traceparent?: string;
}

export interface PlannedUnit {
  output: string;
  prompt: string;
  /** Position of the prompt → output edge in the graph: orders results that settle together. */
  ordinal: number;
  type: OutputType;
  spec: UnitSpec;
  /** Upstream units (by output id) whose results this one reads; `deps` = their number. */
  refs: string[];
  deps: number;
  /** Units that read this one's result. */
  dependents: string[];
}

const PLATFORM_NAMES: Record<Platform, string> = {
  x: 'X (Twitter)', linkedin: 'LinkedIn', instagram: 'Instagram', facebook: 'Facebook', threads: 'Threads', tiktok: 'TikTok',
};

function languageOf(p: PromptNodeValue, model: CatalogModel | null): TargetLanguage {
  if (p.output === 'design') return 'svg';
  return p.targetLanguage ?? (model?.category === 'svg' ? 'svg' : 'text');
}

/** The language hint a code-like result carries when it feeds another prompt. */
function resultLanguage(p: PromptNodeValue, model: CatalogModel | null): string | undefined {
  if (p.output === 'screen') return 'html';
  if (p.output === 'design') return 'svg';
  const lang = languageOf(p, model);
  return lang === 'text' ? undefined : lang;
}

export function planRun(g: ValidGraph): PlannedUnit[] {
  const prompt = (id: string) => g.byId.get(id) as PromptNodeValue;
  const consumers = new Map<string, string[]>();
  for (const [to, froms] of g.inputsOf) for (const f of froms) consumers.set(f, [...(consumers.get(f) ?? []), to]);

  const inputsFor = (p: PromptNodeValue): { inputs: UnitInput[]; refs: string[] } => {
    const inputs: UnitInput[] = [];
    const refs: string[] = [];
    for (const from of g.inputsOf.get(p.id) ?? []) {
      const node = g.byId.get(from)!;
      const label = node.label?.trim() || node.id;
      if (node.kind === 'text') inputs.push({ kind: 'text', from, label, content: node.text });
      else if (node.kind === 'image') inputs.push({ kind: 'image', from, label, url: node.url, ...(node.mediaType ? { mediaType: node.mediaType } : {}) });
      else if (node.kind === 'output') {
        const producerId = g.producer.get(from);
        if (producerId !== undefined) {
          const up = prompt(producerId);
          if (up.output === 'video') continue; // skipped: there is no value to pass on
          const language = resultLanguage(up, g.modelOf.get(up.id) ?? null);
          inputs.push({ kind: 'ref', from, label, ...(language ? { language } : {}) });
          refs.push(from);
        } else if (node.result?.type === 'image' && node.result.path) {
          inputs.push({ kind: 'image', from, label, url: node.result.path, ...(node.result.mediaType ? { mediaType: node.result.mediaType } : {}) });
        } else if (node.result) {
          inputs.push({ kind: 'text', from, label, content: node.result.code ?? '' });
        }
      }
    }
    return { inputs, refs };
  };

  const units: PlannedUnit[] = [];
  g.graph.edges.forEach((e, ordinal) => {
    if (g.producer.get(e.to) !== e.from) return;
    const p = prompt(e.from);
    const out = g.byId.get(e.to)!;
    if (out.kind !== 'output') return;
    const model = g.modelOf.get(p.id) ?? null;
    const { inputs, refs } = p.output === 'video' ? { inputs: [], refs: [] } : inputsFor(p);
    if (out.platform) inputs.push({ kind: 'text', from: out.id, label: 'Platform', content: `Target platform: ${PLATFORM_NAMES[out.platform]}` });
    const dependents = p.output === 'video' ? [] : (consumers.get(out.id) ?? []).flatMap((c) => (prompt(c).output === 'video' ? [] : g.outputsOf.get(c) ?? []));
    units.push({
      output: out.id,
      prompt: p.id,
      ordinal,
      type: p.output,
      refs,
      deps: refs.length,
      dependents: [...new Set(dependents)],
      spec: {
        promptNodeId: p.id,
        outputNodeId: out.id,
        type: p.output,
        prompt: p.prompt,
        model,
        ...(g.fallbacksOf.get(p.id)?.length ? { fallbacks: g.fallbacksOf.get(p.id) } : {}),
        aspectRatio: p.aspectRatio ?? '1:1',
        targetLanguage: languageOf(p, model),
        screenHtml: p.output === 'screen',
        ...(out.label ? { label: out.label } : {}),
        ...(out.platform ? { platform: out.platform } : {}),
        inputs,
      },
    });
  });
  return units;
}
