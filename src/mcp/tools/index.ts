// The nine core Kiln MCP tools, in the order of docs/mcp.md's "Tools" table, then the additive
// ones: the cancel tools, the list and daily-usage reads, and the workflow authoring tools
// (get_workflow, save_workflow). Each calls the same service function as its REST twin.
import type { Context } from '../../context.ts';
import type { ToolDef } from '../tool-server.ts';
import { cancelGenerationTool, generateCodeTool, generateImageTool, getGenerationTool, listGenerationsTool } from './generations.ts';
import { transformImageTool } from './transforms.ts';
import { dailyUsageTool, modelsTool, usageTool } from './usage.ts';
import { cancelWorkflowRunTool, getWorkflowRunTool, getWorkflowTool, listWorkflowsTool, runWorkflowTool, saveWorkflowTool } from './workflows.ts';

export { resolveIdentity } from './common.ts';

export function kilnTools(ctx: Context): ToolDef[] {
  return [
    usageTool(ctx),
    modelsTool(ctx),
    generateImageTool(ctx),
    generateCodeTool(ctx),
    getGenerationTool(ctx),
    transformImageTool(ctx),
    listWorkflowsTool(ctx),
    runWorkflowTool(ctx),
    getWorkflowRunTool(ctx),
    cancelGenerationTool(ctx),
    cancelWorkflowRunTool(ctx),
    listGenerationsTool(ctx),
    dailyUsageTool(ctx),
    getWorkflowTool(ctx),
    saveWorkflowTool(ctx),
  ];
}
