// The nine Kiln MCP tools, in SPEC order. Each calls the same service function as its REST twin.
import type { Context } from '../../context.ts';
import type { ToolDef } from '../tools.ts';
import { generateCodeTool, generateImageTool, getGenerationTool } from './generations.ts';
import { transformImageTool } from './transforms.ts';
import { modelsTool, usageTool } from './usage.ts';
import { getWorkflowRunTool, listWorkflowsTool, runWorkflowTool } from './workflows.ts';

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
  ];
}
