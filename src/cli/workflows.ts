// CLI commands `kiln workflow import` and `kiln workflow export` (added to the command table in
// src/cli/commands.ts). Import validates the graph against the catalog before storing it.

import fs from 'node:fs';
import path from 'node:path';
import { withDb, type Command } from './command.ts';
import { parseArgs, required, UsageError, uuidFlag } from './args.ts';
import type { SavedWorkflow } from '../workflows/authoring.ts';

/** Workflow authoring (graph validation and the catalog it checks against), loaded by these commands only. */
const authoring = () => import('../workflows/authoring.ts');

function readGraph(file: string): unknown {
  try {
    return JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    throw new UsageError(`cannot read ${file}: ${(e as Error).message}`);
  }
}

function summary(w: SavedWorkflow) {
  return {
    id: w.id,
    name: w.name,
    user: w.account_id,
    workspace: w.workspace_id,
    updated_at: w.updated_at,
    nodes: Array.isArray(w.graph?.nodes) ? w.graph.nodes.length : 0,
    edges: Array.isArray(w.graph?.edges) ? w.graph.edges.length : 0,
  };
}

export const workflowCommands: Record<string, Command> = {
  'workflow import': {
    help: '--user ID --file graph.json [--name N] [--workspace ID]  |  --id ID --file graph.json [--name N] (replace a graph)',
    async run(argv, config) {
      const f = parseArgs(argv, {
        options: { user: { type: 'string' }, file: { type: 'string' }, name: { type: 'string' }, workspace: { type: 'string' }, id: { type: 'string' } },
      }).values;
      const file = required(f, 'file');
      const graph = readGraph(file);
      const name = typeof f.name === 'string' ? f.name : null;
      if (f.id !== undefined) {
        if (f.user !== undefined || f.workspace !== undefined) throw new UsageError('--id replaces a graph; --user and --workspace are for new workflows');
        const id = uuidFlag(f, 'id')!;
        const { replaceWorkflow } = await authoring();
        return withDb(config, async (sql) => summary(await replaceWorkflow(sql, config, { id, graph, name })));
      }
      const user = uuidFlag(f, 'user')!;
      const workspace = uuidFlag(f, 'workspace', true);
      const named = (graph as { name?: unknown } | null)?.name;
      const fallback = typeof named === 'string' && named ? named : path.basename(file).replace(/\.json$/i, '');
      const { createWorkflow } = await authoring();
      return withDb(config, async (sql) =>
        summary(await createWorkflow(sql, config, { accountId: user, workspaceId: workspace, name: name ?? String(fallback).slice(0, 200), graph })),
      );
    },
  },
  'workflow export': {
    help: '--id ID (prints the stored graph, including outputs written back by completed runs)',
    async run(argv, config) {
      const f = parseArgs(argv, { options: { id: { type: 'string' } } }).values;
      const id = uuidFlag(f, 'id')!;
      const { getWorkflow } = await authoring();
      return withDb(config, async (sql) => {
        const w = await getWorkflow(sql, id);
        if (!w) throw new Error('workflow not found');
        return w.graph;
      });
    },
  },
};
