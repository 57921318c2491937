// The stored workflow graph format (docs/api.md, "Workflows") as a valibot schema: text,
// image, prompt and output nodes joined by edges. Unknown properties (e.g. canvas positions) are kept
// (objects with an unknown rest, so the OpenAPI document and the typed client allow them too).

import * as v from 'valibot';
import { ASPECT_RATIOS, TARGET_LANGUAGES } from '../providers/types.ts';

export const OUTPUT_TYPES = ['image', 'code', 'screen', 'design', 'video'] as const;
export type OutputType = (typeof OUTPUT_TYPES)[number];
export const PLATFORMS = ['x', 'linkedin', 'instagram', 'facebook', 'threads', 'tiktok'] as const;
export type Platform = (typeof PLATFORMS)[number];

/** Caps of a stored graph at run start (graphs saved before the save limits existed stay runnable). */
export const MAX_NODES = 1000;
export const MAX_EDGES = 5000;
/** What a save accepts (every door: REST, MCP, the console, `kiln workflow import`). */
export const SAVE_MAX_NODES = 200;
export const SAVE_MAX_EDGES = 1000;
/** UTF-8 bytes of the graph's JSON, written-back results left out (they are the service's, not the author's). */
export const SAVE_MAX_BYTES = 256 * 1024;
/** Nesting of objects and arrays, the graph itself being level 1 (a format needs 4; canvas data a few more). */
export const MAX_DEPTH = 32;
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

export const TextNode = v.objectWithRest({
  id: NodeId,
  kind: v.literal('text'),
  text: text(0, MAX_TEXT, 'text'),
  label,
}, v.unknown(), 'a text node needs "id" and "text"');

export const ImageNode = v.objectWithRest({
  id: NodeId,
  kind: v.literal('image'),
  /** An https:// URL, a data: URI, or an image in the store (`seed/…`, the owner's own path, or a store URL). */
  url: v.pipe(v.string('url must be a string'), v.minLength(1, 'url must not be empty'), v.maxLength(16 * 1024 * 1024, 'url is too long'),
    v.description('An `https://` URL, a `data:` URI, or an image in the store the owner can read: `seed/…`, its own path, or a URL of this store.')),
  mediaType: v.optional(v.pipe(v.string('mediaType must be a string'), v.regex(/^image\/[a-z0-9.+-]{1,100}$/i, 'mediaType must be an image MIME type'))),
  label,
}, v.unknown(), 'an image node needs "id" and "url"');

export const PromptNode = v.objectWithRest({
  id: NodeId,
  kind: v.literal('prompt'),
  output: v.picklist(OUTPUT_TYPES, `output must be one of ${OUTPUT_TYPES.join(', ')}`),
  prompt: text(1, MAX_TEXT, 'prompt'),
  model: v.optional(v.pipe(v.string('model must be a string'), v.minLength(1, 'model must not be empty'), v.maxLength(200, 'model is too long'),
    v.description('A model id from `GET /models` that can produce `output`; omitted: the default image or code model.'))),
  aspectRatio: v.optional(v.picklist(ASPECT_RATIOS, `aspectRatio must be one of ${ASPECT_RATIOS.join(', ')}`)),
  targetLanguage: v.optional(v.picklist(TARGET_LANGUAGES, `targetLanguage must be one of ${TARGET_LANGUAGES.join(', ')}`)),
  label,
}, v.unknown(), 'a prompt node needs "id", "output" and "prompt"');

/** What a completed run writes back onto an output node (and what export prints). */
export const OutputResult = v.objectWithRest({
  type: v.picklist(['image', 'code', 'screen', 'design'], 'result.type must be image, code, screen or design'),
  /** Image outputs: the store path (private; GET run gives signed URLs). */
  path: v.optional(v.string()),
  mediaType: v.optional(v.string()),
  code: v.optional(v.string()),
  /** Set (and `path` removed) when retention removed the image. */
  expiredAt: v.optional(v.string()),
}, v.unknown());

export const OutputNode = v.objectWithRest({
  id: NodeId,
  kind: v.literal('output'),
  label,
  platform: v.optional(v.picklist(PLATFORMS, `platform must be one of ${PLATFORMS.join(', ')}`)),
  result: v.optional(v.pipe(v.nullable(OutputResult), v.description('Written back by the last completed run that produced this output; a save that leaves it out keeps it, `null` removes it.'))),
}, v.unknown(), 'an output node needs "id"');

export const Node = v.variant('kind', [TextNode, ImageNode, PromptNode, OutputNode], 'kind must be one of text, image, prompt, output');

export const Edge = v.objectWithRest({
  from: v.pipe(v.string('from must be a string'), v.minLength(1, 'from must not be empty')),
  to: v.pipe(v.string('to must be a string'), v.minLength(1, 'to must not be empty')),
}, v.unknown(), 'an edge is {"from": node id, "to": node id}');

/** A stored graph (what GET /workflows/{id} answers; run start checks it again against these caps). */
export const Graph = v.pipe(
  v.objectWithRest({
    nodes: v.pipe(v.array(Node, 'nodes must be an array'), v.maxLength(MAX_NODES, `a graph has at most ${MAX_NODES} nodes`)),
    edges: v.pipe(v.array(Edge, 'edges must be an array'), v.maxLength(MAX_EDGES, `a graph has at most ${MAX_EDGES} edges`)),
  }, v.unknown(), 'the graph must be an object with "nodes" and "edges" arrays'),
  v.description('The stored graph: its nodes and edges as saved, output nodes with the results completed runs wrote back. Saves take at most 200 nodes and 1,000 edges; graphs stored before that limit may hold up to 1,000 and 5,000.'),
);

/** The graph a save takes (SAVE_* limits); `Graph` is what a stored graph may hold. */
export const SavedGraph = v.pipe(
  v.objectWithRest({
    nodes: v.pipe(v.array(Node), v.maxLength(SAVE_MAX_NODES)),
    edges: v.pipe(v.array(Edge), v.maxLength(SAVE_MAX_EDGES)),
  }, v.unknown()),
  v.description(
    `Nodes (\`text\`, \`image\` inputs; \`prompt\` nodes that generate; \`output\` nodes that receive) and edges \`{ from, to }\` between their ids. ` +
    `At most ${SAVE_MAX_NODES} nodes, ${SAVE_MAX_EDGES.toLocaleString('en-US')} edges and ${SAVE_MAX_BYTES / 1024} KB of JSON (written-back results not counted), nested at most ${MAX_DEPTH} levels. ` +
    'Other properties (canvas positions, …) are kept as sent.',
  ),
);

export type GraphValue = v.InferOutput<typeof Graph>;
export type NodeValue = v.InferOutput<typeof Node>;
export type TextNodeValue = v.InferOutput<typeof TextNode>;
export type ImageNodeValue = v.InferOutput<typeof ImageNode>;
export type PromptNodeValue = v.InferOutput<typeof PromptNode>;
export type OutputNodeValue = v.InferOutput<typeof OutputNode>;
export type OutputResultValue = v.InferOutput<typeof OutputResult>;
