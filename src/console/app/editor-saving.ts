// The workflow editor's saving: create, or replace over the version read (If-Match), Reload and
// Overwrite after a 412, a 400's details placed on what they name, Run (saving first), Delete
// workflow, and the status line. Through the public API only: POST/GET/PUT/DELETE /workflows and
// POST /workflows/{id}/runs (docs/console.md, "The workflow editor").

import { useState } from 'preact/hooks';
import { KilnError, type KilnClient } from './api.ts';
import { go, holdNavigation } from './ui.tsx';
import { edgeKey, fromGraph, noProblems, placeProblems, saveBody, type Doc, type Problems } from './workflow-doc.ts';

type SaveBody = Parameters<KilnClient['workflows']['create']>[0];
type Workflow = Awaited<ReturnType<KilnClient['workflows']['get']>>;

/** POST/GET/PUT /workflows through the typed client; the editor's body is the stored graph format. */
export const calls = (client: KilnClient) => ({
  create: (body: ReturnType<typeof saveBody>) => client.workflows.create(body as SaveBody),
  get: (id: string, opts?: { signal?: AbortSignal }) => client.workflows.get(id, opts),
  update: (id: string, body: ReturnType<typeof saveBody>, opts: { version?: number }) => client.workflows.update(id, body as SaveBody, opts),
});

/** A 400's `error.details` (JSON pointers into the body sent, and what is wrong there). */
const detailsOf = (e: unknown) => (e instanceof KilnError ? e.details : []);

export interface SaveState {
  busy: 'save' | 'run' | 'reload' | 'overwrite' | 'delete' | null;
  /** Refused with 412: saved elsewhere since it was read. */
  conflict: boolean;
  error?: unknown;
  note?: string;
}

export function useSaving({ client, workflowId, initial, doc, onCreated, onReloaded, setProblems }: {
  client: KilnClient;
  workflowId: string | null;
  initial: { doc: Doc; version: number | null };
  /** The document as it is now. */
  doc: Doc;
  onCreated: (id: string) => void;
  /** The version a Reload read, to become the document (its undo history keeps the edits). */
  onReloaded: (fresh: Doc) => void;
  setProblems: (p: Problems) => void;
}) {
  const [id, setId] = useState<string | null>(workflowId);
  const [version, setVersion] = useState<number | null>(initial.version);
  const [baseline, setBaseline] = useState(() => JSON.stringify(saveBody(initial.doc)));
  const [save, setSave] = useState<SaveState>({ busy: null, conflict: false });
  /** Edits that leaving would drop (a new workflow left as it opened has none). */
  const unsaved = JSON.stringify(saveBody(doc)) !== baseline;
  /** Anything for Save to do: edits, or a workflow that does not exist yet. */
  const dirty = unsaved || id === null;

  /** Saves (create, or replace over the version read); the workflow's id when saved. `force`: over whatever version the server has now. */
  const doSave = async (force = false): Promise<string | null> => {
    const body = saveBody(doc);
    const sent = { nodes: body.graph.nodes.map((n) => n.id as string), edges: body.graph.edges.map(edgeKey) };
    setSave({ busy: force ? 'overwrite' : 'save', conflict: false });
    try {
      let saved: Workflow;
      if (id === null) saved = await calls(client).create(body);
      else {
        const over = force ? (await calls(client).get(id)).version : version ?? undefined;
        saved = await calls(client).update(id, body, { version: over });
      }
      if (id === null) {
        // The editor stays as it is (its undo history too); the address becomes the workflow's.
        window.history.replaceState(null, '', `#/workflows/${saved.id}/edit`);
        setId(saved.id);
        onCreated(saved.id);
      }
      setVersion(saved.version);
      setBaseline(JSON.stringify(body));
      setProblems(noProblems());
      setSave({ busy: null, conflict: false, note: `Saved: version ${saved.version}.` });
      return saved.id;
    } catch (error) {
      const details = detailsOf(error);
      if (error instanceof KilnError && error.status === 412) {
        setSave({ busy: null, conflict: true });
      } else if (error instanceof KilnError && error.status === 400 && details.length) {
        setProblems(placeProblems(details, sent));
        setSave({ busy: null, conflict: false });
      } else {
        setSave({ busy: null, conflict: false, error });
      }
      return null;
    }
  };

  const reload = async () => {
    if (id === null) return;
    setSave({ busy: 'reload', conflict: false });
    try {
      const w = await calls(client).get(id);
      const { doc: fresh } = fromGraph(w.name, w.graph);
      onReloaded(fresh);
      setBaseline(JSON.stringify(saveBody(fresh)));
      setVersion(w.version);
      setProblems(noProblems());
      setSave({ busy: null, conflict: false, note: `Reloaded version ${w.version}.` });
    } catch (error) {
      setSave({ busy: null, conflict: true, error });
    }
  };

  /** Saves first when there is anything to save, starts a run and opens its view. */
  const run = async () => {
    const saved = dirty ? await doSave() : id;
    if (!saved) return;
    setSave({ busy: 'run', conflict: false });
    try {
      const r = await client.runs.start(saved);
      holdNavigation(null);
      go(`workflows/${saved}/runs/${r.id}`);
    } catch (error) {
      setSave({ busy: null, conflict: false, error });
    }
  };

  /** DELETE /workflows/{id}, then back to the list; true when deleted. */
  const remove = async (): Promise<boolean> => {
    if (id === null) return false;
    setSave({ busy: 'delete', conflict: false });
    try {
      await client.workflows.delete(id);
      holdNavigation(null);
      go('workflows');
      return true;
    } catch (error) {
      setSave({ busy: null, conflict: false, error });
      return false;
    }
  };

  const status = save.busy === 'save' || save.busy === 'overwrite' ? 'Saving…' : save.busy === 'run' ? 'Starting a run…' : save.busy === 'delete' ? 'Deleting…'
    : save.note && !dirty ? save.note : id === null ? 'Not saved yet.' : dirty ? `Unsaved changes (version ${version} is saved).` : `Saved: version ${version}.`;

  return { id, save, setSave, setBaseline, unsaved, dirty, status, doSave, reload, run, remove };
}
