// The stored workflow graph format (DESIGN "Workflow graph format") as a valibot schema: text,
// image, prompt and output nodes joined by edges. Unknown properties (e.g. canvas positions) are kept.

import * as v from 'valibot';
import { ASPECT_RATIOS, TARGET_LANGUAGES } from '../providers/types.ts';

export const OUTPUT_TYPES = ['image', 'code', 'screen', 'design', 'video'] as const;
export type OutputType = (typeof OUTPUT_TYPES)[number];
export const PLATFORMS = ['x', 'linkedin', 'instagram', 'facebook', 'threads', 'tiktok'] as const;
export type Platform = (typeof PLATFORMS)[number];

export const MAX_NODES = 1000;
export const MAX_EDGES = 5000;
const MAX_TEXT = 50_000;

const chars = (s: string) => {
  let n = 0;
  for (const _ of s) n++;
  return n;
};

const text = (min: number, max: number, what: string) =>
  v.pipe(
    v.string(`${what} must be a string`),
    v.check((s) => {
      const n = s.length > max * 2 ? Infinity : chars(s);
      return n >= min && n <= max;
    }, min > 0 ? `${what} must be ${min} to ${max.toLocaleString('en-US')} characters` : `${what} must be at most ${max.toLocaleString('en-US')} characters`),
  );

const NodeId = v.pipe(
  v.string('id must be a string'),
  v.minLength(1, 'id must not be empty'),
  v.maxLength(200, 'id must be at most 200 characters'),
  // eslint-disable-next-line no-control-regex
  v.regex(/^[^\u0000-\u001f\u007f]+$/, 'id must not contain control characters'),
);

const label = v.optional(v.pipe(v.string('label must be a string'), v.maxLength(200, 'label must be at most 200 characters')));

export const TextNode = v.looseObject({
  id: NodeId,
  kind: v.literal('text'),
  text: text(0, MAX_TEXT, 'text'),
  label,
}, 'a text node needs "id" and "text"');

export const ImageNode = v.looseObject({
  id: NodeId,
  kind: v.literal('image'),
  /** An https:// URL, a data: URI, or an image in the store (`seed/…`, the owner's own path, or a store URL). */
  url: v.pipe(v.string('url must be a string'), v.minLength(1, 'url must not be empty'), v.maxLength(16 * 1024 * 1024, 'url is too long')),
  mediaType: v.optional(v.pipe(v.string('mediaType must be a string'), v.regex(/^image\/[a-z0-9.+-]{1,100}$/i, 'mediaType must be an image MIME type'))),
  label,
}, 'an image node needs "id" and "url"');

export const PromptNode = v.looseObject({
  id: NodeId,
  kind: v.literal('prompt'),
  output: v.picklist(OUTPUT_TYPES, `output must be one of ${OUTPUT_TYPES.join(', ')}`),
  prompt: text(1, MAX_TEXT, 'prompt'),
  model: v.optional(v.pipe(v.string('model must be a string'), v.minLength(1, 'model must not be empty'), v.maxLength(200, 'model is too long'))),
  aspectRatio: v.optional(v.picklist(ASPECT_RATIOS, `aspectRatio must be one of ${ASPECT_RATIOS.join(', ')}`)),
  targetLanguage: v.optional(v.picklist(TARGET_LANGUAGES, `targetLanguage must be one of ${TARGET_LANGUAGES.join(', ')}`)),
  label,
}, 'a prompt node needs "id", "output" and "prompt"');

/** What a completed run writes back onto an output node (and what export prints). */
export const OutputResult = v.looseObject({
  type: v.picklist(['image', 'code', 'screen', 'design'], 'result.type must be image, code, screen or design'),
  /** Image outputs: the store path (private; GET run gives signed URLs). */
  path: v.optional(v.string()),
  mediaType: v.optional(v.string()),
  code: v.optional(v.string()),
  /** Set (and `path` removed) when retention removed the image. */
  expiredAt: v.optional(v.string()),
});

export const OutputNode = v.looseObject({
  id: NodeId,
  kind: v.literal('output'),
  label,
  platform: v.optional(v.picklist(PLATFORMS, `platform must be one of ${PLATFORMS.join(', ')}`)),
  result: v.optional(OutputResult),
}, 'an output node needs "id"');

export const Node = v.variant('kind', [TextNode, ImageNode, PromptNode, OutputNode], 'kind must be one of text, image, prompt, output');

export const Edge = v.looseObject({
  from: v.pipe(v.string('from must be a string'), v.minLength(1, 'from must not be empty')),
  to: v.pipe(v.string('to must be a string'), v.minLength(1, 'to must not be empty')),
}, 'an edge is {"from": node id, "to": node id}');

export const Graph = v.looseObject({
  nodes: v.pipe(v.array(Node, 'nodes must be an array'), v.maxLength(MAX_NODES, `a graph has at most ${MAX_NODES} nodes`)),
  edges: v.pipe(v.array(Edge, 'edges must be an array'), v.maxLength(MAX_EDGES, `a graph has at most ${MAX_EDGES} edges`)),
}, 'the graph must be an object with "nodes" and "edges" arrays');

export type GraphValue = v.InferOutput<typeof Graph>;
export type NodeValue = v.InferOutput<typeof Node>;
export type TextNodeValue = v.InferOutput<typeof TextNode>;
export type ImageNodeValue = v.InferOutput<typeof ImageNode>;
export type PromptNodeValue = v.InferOutput<typeof PromptNode>;
export type OutputNodeValue = v.InferOutput<typeof OutputNode>;
export type OutputResultValue = v.InferOutput<typeof OutputResult>;
