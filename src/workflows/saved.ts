// Saving workflows (operator CLI `kiln workflow import|export`): a graph is validated against the
// catalog before it is stored, so a bad graph is an error, never a half-run later.

import { listModels } from '../billing/catalog.ts';
import type { Config } from '../config.ts';
import type { Sql } from '../db/pool.ts';
import { createWorkflow as createWorkflowSql } from '../db/sql/create_workflow.ts';
import { getWorkflow as getWorkflowSql, type WorkflowRow } from '../db/sql/get_workflow.ts';
import { updateWorkflow } from '../db/sql/update_workflow.ts';
import { checkGraph } from './service.ts';
import type { GraphValue } from './graph.ts';
import { issuesMessage } from './validate.ts';

export class GraphError extends Error {
  constructor(readonly issues: string[]) {
    super(`invalid graph: ${issuesMessage(issues, 20)}`);
    this.name = 'GraphError';
  }
}

/** A saved workflow; its graph is one checkGraph accepted when stored (runs write results back onto output nodes). */
export type SavedWorkflow = Omit<WorkflowRow, 'graph'> & { graph: GraphValue };

async function validated(sql: Sql, config: Config, accountId: string, graph: unknown): Promise<unknown> {
  const checked = checkGraph(config, await listModels(sql, config.defaultMarkup), accountId, graph);
  if (!checked.ok) throw new GraphError(checked.issues);
  return checked.value.graph;
}

/** Saves a new workflow for `accountId`. Throws GraphError, or KN001/KF001/KI001 from SQL. */
export async function createWorkflow(sql: Sql, config: Config, opts: { accountId: string; workspaceId: string | null; name: string; graph: unknown }): Promise<SavedWorkflow> {
  const graph = await validated(sql, config, opts.accountId, opts.graph);
  const [row] = await createWorkflowSql(sql, opts.accountId, opts.workspaceId, opts.name, graph);
  return row as SavedWorkflow;
}

/** Replaces a workflow's graph (and name, when given): an edit that bumps updated_at. */
export async function replaceWorkflow(sql: Sql, config: Config, opts: { id: string; graph: unknown; name: string | null }): Promise<SavedWorkflow> {
  const [current] = await getWorkflowSql(sql, opts.id, null);
  if (!current) throw Object.assign(new Error('workflow not found'), { code: 'KN001' });
  const graph = await validated(sql, config, current.account_id, opts.graph);
  const [row] = await updateWorkflow(sql, opts.id, graph, opts.name);
  return row as SavedWorkflow;
}

/** The stored workflow, including outputs written back by completed runs; null when absent. */
export async function getWorkflow(sql: Sql, id: string): Promise<SavedWorkflow | null> {
  const [row] = await getWorkflowSql(sql, id, null);
  return (row as SavedWorkflow | undefined) ?? null;
}
