// Non-REST mounts of the h3 app (files route, MCP endpoint, the console and /docs): composed here,
// by the processes that serve them, so that http/ never imports mcp/ or console/.

import type { H3 } from 'h3';
import type { Context } from '../context.ts';
import { mountConsole } from '../console/mount.ts';
import { mountFiles } from '../http/files.ts';
import { mountMcp } from '../mcp/mount.ts';

export const extensions: Array<(app: H3, ctx: Context) => void> = [mountFiles, (app, ctx) => mountMcp(app, ctx), mountConsole];
