// The nine Kiln MCP tools of the SPEC, in its order, then the additive ones: the cancel tools and
// the list and daily-usage reads. Each calls the same service function as its REST twin.
import type { Context } from '../../context.ts';
import type { ToolDef } from '../tools.ts';
import { cancelGenerationTool, generateCodeTool, generateImageTool, getGenerationTool, listGenerationsTool } from './generations.ts';
import { transformImageTool } from './transforms.ts';
import { dailyUsageTool, modelsTool, usageTool } from './usage.ts';
import { cancelWorkflowRunTool, getWorkflowRunTool, listWorkflowsTool, runWorkflowTool } from './workflows.ts';

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
  ];
}
