// The workflow editor's canvas (React Flow, through preact/compat): the nodes as React Flow draws
// them, each edge routed around the nodes (edge-route.ts), and the keyboard on the canvas itself
// (arrow keys pan, + and − zoom). What a drag, a click or a drawn connection means for the
// document is the editor's (editor.tsx): the canvas reports it.

import {
  Background, BaseEdge, Controls, getBezierPath, Handle, MarkerType, Position, ReactFlow, useReactFlow,
  type Connection, type Edge, type EdgeChange, type EdgeProps, type Node, type NodeChange, type NodeProps,
} from '@xyflow/react';
import { useMemo } from 'preact/hooks';
import { shortText } from './api.ts';
import { midpoint, routeEdge, type Rect, type Side } from './edge-route.ts';
import { roundedPath } from './graph-layout.ts';
import { edgeKey, KIND_NAME, nodeName, takesInput, type Doc, type DocNode, type Kind, type Problems } from './workflow-doc.ts';

export type Size = { width: number; height: number };
export type Selection = { type: 'node' | 'edge'; id: string } | null;

type NodeData = { node: DocNode; problems: Array<{ field: string; message: string }>; preview?: string; down: boolean };
type KNode = Node<NodeData, 'kiln'>;
type KEdge = Edge<{ boxes: Map<string, Rect> }, 'routed'>;

/** A new node's size until it is measured (nodes are 184 px wide; the stylesheet says so). */
export const NEW_SIZE: Size = { width: 184, height: 90 };
const HANDLE = 12;
export const FIT = { padding: 0.15, maxZoom: 1.1 };

/** A one-line summary of what the node holds, under its name on the canvas. */
function summary(n: DocNode): string {
  switch (n.kind) {
    case 'text': return n.text ? shortText(n.text, 48) : 'No text yet';
    case 'image': return n.url ? shortText(n.url.replace(/^data:([^;,]+)[^,]*,.*$/, 'data: $1'), 40) : 'No image yet';
    case 'prompt': return n.prompt ? shortText(n.prompt, 48) : 'No prompt yet';
    case 'output': return n.platform ? `for ${n.platform}` : 'Result';
  }
}

function KilnNode({ data, selected }: NodeProps<KNode>) {
  const n = data.node;
  const bad = data.problems.length > 0;
  return (
    <div class={`enode k-${n.kind}${selected ? ' picked' : ''}${bad ? ' invalid' : ''}`}>
      {takesInput(n.kind) && <Handle type="target" position={data.down ? Position.Top : Position.Left} />}
      <span class="node-kind">{KIND_NAME[n.kind]}{n.kind === 'prompt' && n.output ? ` · ${n.output}` : ''}</span>
      <span class="node-title">{nodeName(n)}</span>
      {data.preview && <img class="enode-thumb" src={data.preview} alt="" />}
      <span class="node-sub">{summary(n)}</span>
      {n.kind === 'prompt' && <span class="node-model">{n.output === 'video' ? 'skipped at run time' : n.model ?? 'default model'}</span>}
      {bad && <span class="enode-problem">{data.problems[0]!.message}{data.problems.length > 1 ? ` (+${data.problems.length - 1} more)` : ''}</span>}
      <Handle type="source" position={data.down ? Position.Bottom : Position.Right} />
    </div>
  );
}

const SIDE: Record<Position, Side> = { [Position.Left]: 'left', [Position.Right]: 'right', [Position.Top]: 'top', [Position.Bottom]: 'bottom' };

/**
 * An edge along a route around every node (edge-route.ts), from the source's output handle to the
 * target's input handle, so that an edge drawn by hand, or left behind by a drag, never passes
 * under a node. Where nodes are packed too close for any route, React Flow's curve.
 */
function RoutedEdge(p: EdgeProps<KEdge>) {
  const boxes = p.data?.boxes;
  const route = useMemo(() => {
    if (!boxes) return null;
    const all = [...boxes.values()];
    const own: [Rect | undefined, Rect | undefined] = [boxes.get(p.source), boxes.get(p.target)];
    return routeEdge({ x: p.sourceX, y: p.sourceY }, SIDE[p.sourcePosition], { x: p.targetX, y: p.targetY }, SIDE[p.targetPosition], all, own);
  }, [boxes, p.source, p.target, p.sourceX, p.sourceY, p.targetX, p.targetY, p.sourcePosition, p.targetPosition]);
  let path: string;
  let at: { x: number; y: number };
  if (route) {
    path = roundedPath(route);
    at = midpoint(route);
  } else {
    const [d, x, y] = getBezierPath(p);
    path = d;
    at = { x, y };
  }
  return (
    <BaseEdge id={p.id} path={path} markerEnd={p.markerEnd} markerStart={p.markerStart} style={p.style} interactionWidth={p.interactionWidth}
      label={p.label} labelX={at.x} labelY={at.y} labelStyle={p.labelStyle} labelShowBg={p.labelShowBg} labelBgStyle={p.labelBgStyle}
      labelBgPadding={p.labelBgPadding} labelBgBorderRadius={p.labelBgBorderRadius} />
  );
}

const NODE_TYPES = { kiln: KilnNode };
const EDGE_TYPES = { routed: RoutedEdge };

/**
 * Where a node's handles are (as the stylesheet puts them: 12 px, centred on the left and right
 * borders, or on the top and bottom ones when the graph reads top to bottom). Given to React Flow
 * with each node so that it always knows them: measured from the page only, it lost them when a
 * render passed a node back while it was measuring it, and then stopped drawing its edges.
 */
function handlesOf(kind: Kind, size: Size, down: boolean) {
  const h = HANDLE / 2;
  const input = down ? { position: Position.Top, x: size.width / 2 - h, y: -h } : { position: Position.Left, x: -h, y: size.height / 2 - h };
  const output = down ? { position: Position.Bottom, x: size.width / 2 - h, y: size.height - h } : { position: Position.Right, x: size.width - h, y: size.height / 2 - h };
  return [
    ...(takesInput(kind) ? [{ type: 'target' as const, ...input, width: HANDLE, height: HANDLE }] : []),
    { type: 'source' as const, ...output, width: HANDLE, height: HANDLE },
  ];
}

/**
 * An edge's arrowhead, sized in pixels whatever the stroke. React Flow names a marker after its
 * options, and a colour with var() in it breaks that reference: `tone` is a word the stylesheet
 * finds in the marker's id and colours it by (an inline colour that is no colour is ignored).
 */
const arrow = (tone: 'plain' | 'picked' | 'invalid') => ({ type: MarkerType.ArrowClosed, width: 22, height: 22, markerUnits: 'userSpaceOnUse', color: tone });

/** A picture for an image node on the canvas: a data: URI as is, a generated image by its signed URL (when the picker has it). */
function previewOf(url: string | undefined, previews: Map<string, string>): string | undefined {
  if (!url) return undefined;
  if (previews.has(url)) return previews.get(url);
  if (/^data:image\//i.test(url)) return url;
  return undefined;
}

export interface CanvasProps {
  doc: Doc;
  problems: Problems;
  selection: Selection;
  measured: Map<string, Size>;
  previews: Map<string, string>;
  /** Handles on the top and bottom (the graph reads top to bottom), else left and right. */
  down: boolean;
  onSelect: (update: (s: Selection) => Selection) => void;
  onMeasured: (sizes: Array<[string, Size]>) => void;
  /** Nodes moved: by a drag (`ended` once it is let go) or by arrow keys (each press `ended`). */
  onMove: (positions: Map<string, { x: number; y: number }>, ended: boolean) => void;
  onDragStart: () => void;
  onConnect: (from: string, to: string) => void;
  canConnect: (from: string, to: string) => boolean;
}

export function Canvas({ doc, problems, selection, measured, previews, down, onSelect, onMeasured, onMove, onDragStart, onConnect, canConnect }: CanvasProps) {
  const flow = useReactFlow();

  const onNodesChange = (changes: NodeChange<KNode>[]) => {
    let sizes: Array<[string, Size]> | null = null;
    let moved: Map<string, { x: number; y: number }> | null = null;
    let ended = false;
    for (const c of changes) {
      if (c.type === 'dimensions' && c.dimensions) (sizes ??= []).push([c.id, c.dimensions]);
      else if (c.type === 'position' && c.position) {
        (moved ??= new Map()).set(c.id, c.position);
        if (!c.dragging) ended = true;
      } else if (c.type === 'select') {
        onSelect((s) => (c.selected ? { type: 'node', id: c.id } : s?.type === 'node' && s.id === c.id ? null : s));
      }
    }
    if (sizes) onMeasured(sizes);
    if (moved) onMove(moved, ended);
  };

  const onEdgesChange = (changes: EdgeChange<KEdge>[]) => {
    for (const c of changes) {
      if (c.type === 'select') onSelect((s) => (c.selected ? { type: 'edge', id: c.id } : s?.type === 'edge' && s.id === c.id ? null : s));
    }
  };

  const rfNodes = useMemo<KNode[]>(() => doc.nodes.map((n) => ({
    id: n.id,
    type: 'kiln',
    position: n.position,
    data: { node: n, problems: problems.nodes.get(n.id) ?? [], preview: n.kind === 'image' ? previewOf(n.url, previews) : undefined, down },
    selected: selection?.type === 'node' && selection.id === n.id,
    measured: measured.get(n.id),
    handles: handlesOf(n.kind, measured.get(n.id) ?? NEW_SIZE, down),
    ariaLabel: nodeName(n),
    domAttributes: { 'data-node-id': n.id, 'data-kind': n.kind, ...(problems.nodes.has(n.id) ? { 'data-invalid': 'true' } : {}) } as KNode['domAttributes'],
  })), [doc.nodes, problems, selection, measured, previews, down]);

  const rfEdges = useMemo<KEdge[]>(() => {
    const names = new Map(doc.nodes.map((n) => [n.id, nodeName(n)]));
    // Every node's box, for the routes around them.
    const boxes = new Map(doc.nodes.map((n) => [n.id, { ...n.position, ...(measured.get(n.id) ?? NEW_SIZE) }]));
    return doc.edges.map((e) => {
      const key = edgeKey(e);
      const bad = problems.edges.get(key);
      const picked = selection?.type === 'edge' && selection.id === key;
      return {
        id: key,
        type: 'routed',
        source: e.from,
        target: e.to,
        data: { boxes },
        selected: picked,
        markerEnd: arrow(bad ? 'invalid' : picked ? 'picked' : 'plain'),
        className: bad ? 'invalid' : undefined,
        label: bad ? shortText(bad[0]!, 48) : undefined,
        ariaLabel: `Edge from ${names.get(e.from) ?? e.from} to ${names.get(e.to) ?? e.to}${bad ? `: ${bad.join('; ')}` : ''}`,
        domAttributes: { 'data-edge': key, 'data-from': e.from, 'data-to': e.to, ...(bad ? { 'data-invalid': 'true' } : {}) } as KEdge['domAttributes'],
      };
    });
  }, [doc.edges, doc.nodes, problems, selection, measured]);

  // Arrow keys pan the view and + / − zoom while the canvas itself has focus (its nodes move with arrows when selected).
  const onCanvasKey = (e: KeyboardEvent) => {
    if (e.target !== e.currentTarget) return;
    const v = flow.getViewport();
    const d = e.shiftKey ? 200 : 60;
    const pan: Record<string, [number, number]> = { ArrowLeft: [d, 0], ArrowRight: [-d, 0], ArrowUp: [0, d], ArrowDown: [0, -d] };
    if (pan[e.key]) {
      e.preventDefault();
      flow.setViewport({ ...v, x: v.x + pan[e.key]![0], y: v.y + pan[e.key]![1] });
    } else if (e.key === '+' || e.key === '=') { e.preventDefault(); flow.zoomIn(); }
    else if (e.key === '-' || e.key === '_') { e.preventDefault(); flow.zoomOut(); }
    else if (e.key === '0') { e.preventDefault(); flow.fitView(FIT); }
  };

  return (
    <div class="editor-canvas" tabIndex={0} role="region" aria-label="Canvas" aria-describedby="canvas-help" onKeyDown={onCanvasKey}>
      <ReactFlow<KNode, KEdge>
        nodes={rfNodes}
        edges={rfEdges}
        nodeTypes={NODE_TYPES}
        edgeTypes={EDGE_TYPES}
        onNodesChange={onNodesChange}
        onEdgesChange={onEdgesChange}
        onConnect={(c: Connection) => onConnect(c.source, c.target)}
        isValidConnection={(c) => canConnect(c.source, c.target)}
        onNodeDragStart={onDragStart}
        deleteKeyCode={null}
        selectionKeyCode={null}
        multiSelectionKeyCode={null}
        fitView
        fitViewOptions={FIT}
        minZoom={0.2}
        maxZoom={2}
        colorMode="system"
        proOptions={{ hideAttribution: false }}
      >
        <Background gap={20} />
        <Controls showInteractive={false} position="bottom-left" />
      </ReactFlow>
      {doc.nodes.length === 0 && <p class="canvas-empty muted">Add a node to start: a Text or Image input, a Prompt, then an Output.</p>}
    </div>
  );
}
