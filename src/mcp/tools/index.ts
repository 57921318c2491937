// The nine Kiln MCP tools of the SPEC, in its order, then the cancel tools (additive). Each calls
// the same service function as its REST twin.
import type { Context } from '../../context.ts';
import type { ToolDef } from '../tools.ts';
import { cancelGenerationTool, generateCodeTool, generateImageTool, getGenerationTool } from './generations.ts';
import { transformImageTool } from './transforms.ts';
import { modelsTool, usageTool } from './usage.ts';
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
  ];
}
