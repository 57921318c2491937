// The workflow editor's controls: the head (Workflow name, the save status, Delete workflow), the
// toolbar (Add node, Add edge, Delete, Undo, Redo, Auto-layout, Save, Run), the Add edge form, and
// what a save answered (a 412's Reload or Overwrite, a 400's list of problems, any other error).
// Each reports to the editor (editor.tsx), which holds the document and does the saving.

import { useEffect, useRef, useState } from 'preact/hooks';
import { Alert } from './ui.tsx';
import { edgeKey, KIND_NAME, KINDS, nodeName, problemCount, type Doc, type DocNode, type DocEdge, type Kind, type Problems } from './workflow-doc.ts';
import type { SaveState } from './editor-saving.ts';

/** The Add node button and its menu (Text, Image, Prompt, Output): arrow keys move, Escape closes. */
function AddNodeMenu({ onAdd }: { onAdd: (kind: Kind) => void }) {
  const [open, setOpen] = useState(false);
  const button = useRef<HTMLButtonElement>(null);
  const menu = useRef<HTMLUListElement>(null);
  const items = () => [...(menu.current?.querySelectorAll<HTMLButtonElement>('[role="menuitem"]') ?? [])];
  useEffect(() => {
    if (!open) return;
    items()[0]?.focus();
    const away = (e: PointerEvent) => {
      if (!menu.current?.contains(e.target as globalThis.Node) && !button.current?.contains(e.target as globalThis.Node)) setOpen(false);
    };
    document.addEventListener('pointerdown', away);
    return () => document.removeEventListener('pointerdown', away);
  }, [open]);
  const close = () => {
    setOpen(false);
    button.current?.focus();
  };
  const onKey = (e: KeyboardEvent) => {
    const all = items();
    const i = all.indexOf(document.activeElement as HTMLButtonElement);
    if (e.key === 'Escape') { e.preventDefault(); close(); }
    else if (e.key === 'ArrowDown') { e.preventDefault(); all[(i + 1) % all.length]?.focus(); }
    else if (e.key === 'ArrowUp') { e.preventDefault(); all[(i - 1 + all.length) % all.length]?.focus(); }
    else if (e.key === 'Home') { e.preventDefault(); all[0]?.focus(); }
    else if (e.key === 'End') { e.preventDefault(); all[all.length - 1]?.focus(); }
    else if (e.key === 'Tab') setOpen(false);
  };
  return (
    <div class="menu-wrap">
      <button ref={button} type="button" class="btn small" aria-haspopup="menu" aria-expanded={open} aria-controls="add-node-menu"
        onClick={() => setOpen(!open)} onKeyDown={(e) => { if (e.key === 'ArrowDown' && !open) { e.preventDefault(); setOpen(true); } }}>
        Add node <span aria-hidden="true">▾</span>
      </button>
      {open && (
        <ul id="add-node-menu" ref={menu} class="menu" role="menu" aria-label="Add node" onKeyDown={onKey}>
          {KINDS.map((k) => (
            <li key={k} role="none">
              <button type="button" role="menuitem" tabIndex={-1} onClick={() => { setOpen(false); onAdd(k); }}>{KIND_NAME[k]}</button>
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** Workflow name, the status line (which version is saved, whether there are unsaved changes), and Delete workflow once saved. */
export function EditorHead({ doc, problems, status, canDelete, onName, onDelete }: {
  doc: Doc; problems: Problems; status: string; canDelete: boolean; onName: (name: string) => void; onDelete: () => void;
}) {
  return (
    <div class="editor-head">
      <div class="field editor-name">
        <label for="wf-name">Workflow name</label>
        <input id="wf-name" type="text" autoComplete="off" value={doc.name} maxLength={200}
          onInput={(e) => onName((e.target as HTMLInputElement).value)}
          aria-invalid={problems.name.length > 0 || undefined} aria-describedby={problems.name.length ? 'wf-name-problem' : undefined} />
        {problems.name.length > 0 && <p class="field-problem" id="wf-name-problem">{problems.name.join('; ')}</p>}
      </div>
      <p class="muted small editor-state" role="status">{status}</p>
      {canDelete && <button type="button" class="btn small danger ghost editor-delete" onClick={onDelete}>Delete workflow</button>}
    </div>
  );
}

/** The toolbar's buttons; `selected` is what Delete removes. */
export function Toolbar({ doc, selectedNode, selectedEdge, busy, canUndo, canRedo, edgeFormOpen, onAdd, onToggleEdgeForm, onDelete, onUndo, onRedo, onLayout, onSave, onRun }: {
  doc: Doc; selectedNode?: DocNode; selectedEdge?: DocEdge; busy: boolean; canUndo: boolean; canRedo: boolean; edgeFormOpen: boolean;
  onAdd: (kind: Kind) => void; onToggleEdgeForm: () => void; onDelete: () => void; onUndo: () => void; onRedo: () => void;
  onLayout: () => void; onSave: () => void; onRun: () => void;
}) {
  const names = new Map(doc.nodes.map((n) => [n.id, nodeName(n)]));
  return (
    <div class="editor-tools">
      <AddNodeMenu onAdd={onAdd} />
      <button type="button" class="btn small" aria-expanded={edgeFormOpen} aria-controls="edge-form" onClick={onToggleEdgeForm}>Add edge</button>
      <button type="button" class="btn small danger" disabled={!selectedNode && !selectedEdge} onClick={onDelete} aria-describedby="delete-what">Delete</button>
      <span id="delete-what" class="sr-only">
        {selectedNode ? `Deletes the node ${nodeName(selectedNode)} and its edges` : selectedEdge ? `Deletes the edge from ${names.get(selectedEdge.from)} to ${names.get(selectedEdge.to)}` : 'Select a node or an edge first'}
      </span>
      <span class="tool-sep" aria-hidden="true" />
      <button type="button" class="btn small ghost" disabled={!canUndo} onClick={onUndo} aria-keyshortcuts="Control+Z Meta+Z">Undo</button>
      <button type="button" class="btn small ghost" disabled={!canRedo} onClick={onRedo} aria-keyshortcuts="Shift+Control+Z Shift+Meta+Z Control+Y">Redo</button>
      <button type="button" class="btn small ghost" disabled={!doc.nodes.length} onClick={onLayout}>Auto-layout</button>
      <span class="tool-grow" />
      <button type="button" class="btn small" disabled={busy} onClick={onSave}>Save</button>
      <button type="button" class="btn small primary" disabled={busy || !doc.nodes.length} onClick={onRun}>Run</button>
    </div>
  );
}

export interface EdgeFormState { open: boolean; from: string; to: string; problem: string | null }

/** Add edge: From, To and Connect, which says why a pair cannot be joined (`onConnect` answers the problem, or null). */
export function EdgeForm({ doc, form, setForm, onConnect }: {
  doc: Doc; form: EdgeFormState; setForm: (f: EdgeFormState) => void; onConnect: (from: string, to: string) => string | null;
}) {
  const nodeOptions = doc.nodes.map((n) => <option key={n.id} value={n.id}>{nodeName(n)} ({KIND_NAME[n.kind]})</option>);
  return (
    <form id="edge-form" class="edge-form" aria-label="Add edge" onSubmit={(e) => {
      e.preventDefault();
      setForm({ ...form, problem: onConnect(form.from, form.to) });
    }}>
      <div class="field">
        <label for="edge-from">From</label>
        <select id="edge-from" value={form.from} onChange={(e) => setForm({ ...form, from: (e.target as HTMLSelectElement).value, problem: null })}>{nodeOptions}</select>
      </div>
      <div class="field">
        <label for="edge-to">To</label>
        <select id="edge-to" value={form.to} onChange={(e) => setForm({ ...form, to: (e.target as HTMLSelectElement).value, problem: null })}>{nodeOptions}</select>
      </div>
      <button type="submit" class="btn small primary" disabled={doc.nodes.length < 2}>Connect</button>
      {form.problem && <p class="field-problem edge-problem" role="alert">{form.problem}</p>}
    </form>
  );
}

/** What the last save answered: a 412 (Reload or Overwrite), another error, or a 400's problems, each a button to what it names. */
export function SaveNotices({ doc, save, problems, busy, onReload, onOverwrite, onShowNode, onShowEdge }: {
  doc: Doc; save: SaveState; problems: Problems; busy: boolean;
  onReload: () => void; onOverwrite: () => void; onShowNode: (nodeId: string) => void; onShowEdge: (key: string) => void;
}) {
  const names = new Map(doc.nodes.map((n) => [n.id, nodeName(n)]));
  const count = problemCount(problems);
  return (
    <>
      {save.conflict && (
        <div class="notice error conflict" role="alert">
          <p><strong>This workflow was changed elsewhere</strong> since it was opened here, so it was not saved.
            Reload it (your changes here are lost), or overwrite it with yours.</p>
          <div class="row">
            <button type="button" class="btn small" disabled={busy} onClick={onReload}>Reload</button>
            <button type="button" class="btn small danger" disabled={busy} onClick={onOverwrite}>Overwrite</button>
          </div>
        </div>
      )}
      {save.error !== undefined && <Alert error={save.error} />}
      {count > 0 && (
        <div class="notice error problems" role="alert">
          <p><strong>Not saved: {count === 1 ? 'one problem' : `${count} problems`}.</strong></p>
          <ul>
            {[...problems.nodes].flatMap(([nodeId, list]) => list.map((p, i) => (
              <li key={`${nodeId}-${i}`}><button type="button" class="linkish" onClick={() => onShowNode(nodeId)}>{names.get(nodeId) ?? nodeId}</button>: {p.message}</li>
            )))}
            {[...problems.edges].flatMap(([key, list]) => list.map((m, i) => {
              const e = doc.edges.find((x) => edgeKey(x) === key);
              return <li key={`${key}-${i}`}><button type="button" class="linkish" onClick={() => onShowEdge(key)}>Edge {e ? `${names.get(e.from)} → ${names.get(e.to)}` : key}</button>: {m}</li>;
            }))}
            {problems.name.map((m, i) => <li key={`name-${i}`}>Workflow name: {m}</li>)}
            {problems.general.map((m, i) => <li key={`g-${i}`}>{m}</li>)}
          </ul>
        </div>
      )}
    </>
  );
}
