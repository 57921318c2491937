// `kiln workflow save FILE [--id ID] [--name N]`, `kiln workflow get ID` and `kiln workflow rm ID`:
// a user's workflows through the API (the operator's `kiln workflow import|export` work on the
// database instead). A refused save prints every problem the service listed, one per line.

import fs from 'node:fs';
import path from 'node:path';
import type { SaveWorkflowRequest, Workflow } from '../../client/index.ts';
import { parseArgs, UsageError } from '../args.ts';
import { clientFromEnv, EXIT } from './exit.ts';
import { dim, green, interactive, jsonLine } from './live.ts';

export const WORKFLOW_HELP =
  'save FILE [--id ID] [--name N] | get ID | rm ID [--json] — save a graph (create, or replace ID), print a workflow as JSON, delete one';

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/**
 * What FILE holds as a save: a graph (`{ nodes, edges, name? }`, as `kiln workflow import` takes
 * and the examples are), or a workflow as `kiln workflow get` prints it (`{ name, graph, … }`).
 */
function readSave(file: string): { name: string | null; graph: unknown } {
  let value: unknown;
  try {
    value = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
  }
  if (isObject(value) && isObject(value.graph) && !('nodes' in value)) {
    return { name: typeof value.name === 'string' ? value.name : null, graph: value.graph };
  }
  const named = isObject(value) ? value.name : undefined;
  return { name: typeof named === 'string' && named ? named : null, graph: value };
}

function summary(w: Workflow): string {
  const n = w.graph.nodes.length;
  const e = w.graph.edges.length;
  return `workflow ${w.id} "${w.name}" · version ${w.version} · ${n} node${n === 1 ? '' : 's'}, ${e} edge${e === 1 ? '' : 's'}`;
}

export async function workflow(argv: string[]): Promise<number> {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'save': return save(rest);
    case 'get': return get(rest);
    case 'rm': return rm(rest);
    default: throw new UsageError(sub === undefined ? 'missing a subcommand: save, get or rm' : `unknown subcommand ${JSON.stringify(sub)} (save, get, rm; the operator's import and export work on the database)`);
  }
}

async function save(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, {
    options: { id: { type: 'string' }, name: { type: 'string' }, json: { type: 'boolean' } },
    positionals: { min: 1, max: 1, names: 'FILE (a graph as JSON)' },
  });
  const file = positionals[0]!;
  const read = readSave(file);
  const client = clientFromEnv();
  let saved: Workflow;
  if (flags.id !== undefined) {
    // A replace keeps the stored name unless one is given (flag, then file).
    const name = flags.name ?? read.name ?? (await client.workflows.get(flags.id)).name;
    saved = await client.workflows.update(flags.id, { name, graph: read.graph } as SaveWorkflowRequest);
  } else {
    const name = flags.name ?? read.name ?? path.basename(file).replace(/\.json$/i, '').slice(0, 200);
    saved = await client.workflows.create({ name, graph: read.graph } as SaveWorkflowRequest);
  }
  if (interactive(flags.json)) process.stdout.write(`${green('✔')} saved ${summary(saved)}\n${dim(`run it: kiln run ${saved.id} --watch`)}\n`);
  else jsonLine(process.stdout, { event: 'saved', id: saved.id, name: saved.name, version: saved.version, updatedAt: saved.updatedAt, created: flags.id === undefined });
  return EXIT.ok;
}

async function get(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, { options: { json: { type: 'boolean' } }, positionals: { min: 1, max: 1, names: 'ID' } });
  const w = await clientFromEnv().workflows.get(positionals[0]!);
  // The workflow as JSON either way (`kiln workflow save` takes the file back): indented for a
  // person, one line elsewhere.
  if (interactive(flags.json)) process.stdout.write(`${JSON.stringify(w, null, 2)}\n`);
  else jsonLine(process.stdout, w);
  return EXIT.ok;
}

async function rm(argv: string[]): Promise<number> {
  const { values: flags, positionals } = parseArgs(argv, { options: { json: { type: 'boolean' } }, positionals: { min: 1, max: 1, names: 'ID' } });
  const id = positionals[0]!;
  await clientFromEnv().workflows.delete(id);
  if (interactive(flags.json)) process.stdout.write(`${green('✔')} deleted workflow ${id} ${dim('(its runs stay readable)')}\n`);
  else jsonLine(process.stdout, { event: 'deleted', id });
  return EXIT.ok;
}
