// Saving workflows as the operator (`kiln workflow import|export`, and tests): the same check as
// every other save (check.ts), without a caller — the owner is named, a replace reaches any workflow.

import { listModels } from '../billing/catalog.ts';
import type { Config } from '../config.ts';
import type { Sql } from '../db/pool.ts';
import { createWorkflow as createWorkflowSql } from '../db/sql/create_workflow.ts';
import { getWorkflow as getWorkflowSql, type WorkflowRow } from '../db/sql/get_workflow.ts';
import { lockWorkflow } from '../db/sql/lock_workflow.ts';
import { replaceWorkflow as replaceWorkflowSql } from '../db/sql/replace_workflow.ts';
import type { ErrorDetail } from '../errors.ts';
import { checkSave } from './check.ts';
import type { GraphValue } from './graph.ts';
import { issuesMessage } from './validate.ts';

export class GraphError extends Error {
  constructor(readonly details: ErrorDetail[]) {
    super(`invalid graph: ${issuesMessage(details, 20)}`);
    this.name = 'GraphError';
  }
}

/** A saved workflow; its graph is one checkSave accepted when stored (runs write results back onto output nodes). */
export type SavedWorkflow = Omit<WorkflowRow, 'graph'> & { graph: GraphValue };

/** Saves a new workflow for `accountId` (in `workspaceId` when given). Throws GraphError, or KN001/KF001/KI001 from SQL. */
export async function createWorkflow(sql: Sql, config: Config, opts: { accountId: string; workspaceId: string | null; name: string; graph: unknown }): Promise<SavedWorkflow> {
  const checked = checkSave(config, await listModels(sql, config.defaultMarkup), opts.accountId, { name: opts.name, graph: opts.graph });
  if (!checked.ok) throw new GraphError(checked.details);
  const [row] = await createWorkflowSql(sql, opts.accountId, opts.workspaceId, checked.name!, checked.graph);
  return row as SavedWorkflow;
}

/**
 * Replaces a workflow's graph (and name, when given): a save like any other — version + 1,
 * written-back results kept on output nodes the new graph leaves them out of. Throws GraphError, KN001.
 */
export async function replaceWorkflow(sql: Sql, config: Config, opts: { id: string; graph: unknown; name: string | null }): Promise<SavedWorkflow> {
  const models = await listModels(sql, config.defaultMarkup);
  return sql.begin(async (tx) => {
    const [current] = await lockWorkflow(tx, null, null, opts.id, null);
    const checked = checkSave(config, models, current!.account_id, { name: opts.name, graph: opts.graph }, { stored: current!.graph, nameOptional: true });
    if (!checked.ok) throw new GraphError(checked.details);
    const [row] = await replaceWorkflowSql(tx, null, null, opts.id, checked.name, checked.graph, null);
    return row as SavedWorkflow;
  }) as Promise<SavedWorkflow>;
}

/** The stored workflow (not deleted), including outputs written back by completed runs; null when absent. */
export async function getWorkflow(sql: Sql, id: string): Promise<SavedWorkflow | null> {
  const [row] = await getWorkflowSql(sql, id, null, null);
  return (row as SavedWorkflow | undefined) ?? null;
}
