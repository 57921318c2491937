// MCP tool plumbing: the ToolDef contract and a per-request low-level SDK Server exposing tools/list and
// tools/call, mapping business errors, bad arguments and unlinked identities to isError tool results.
import { countRejection, countToolCall } from '../telemetry/metrics.ts';
import { failSpan, withSpan } from '../telemetry/tracing.ts';
import type { Span } from '@opentelemetry/api';
import { fromJsonSchema, ProtocolError, ProtocolErrorCode, Server } from '@modelcontextprotocol/server';
import type { CallToolResult, Tool } from '@modelcontextprotocol/server';
import type { Identity } from './auth.ts';
import { unstorableValue } from '../http/storable.ts';

export type { Identity };

export interface ToolContext {
  accountId: string;
  identity: Identity;
  requestId: string;
  /** The call's `tools/call` span, when tracing is on: the parent of what the tool does. */
  span?: Span;
  /** Aborted when the client disconnects. */
  signal?: AbortSignal;
  /**
   * When the request carries a `progressToken`: sends `notifications/progress` for it (never
   * throws; `progress` must grow from one call to the next).
   */
  progress?: (progress: number, message?: string) => void;
}

export interface ToolError {
  /** `details`: every problem of an argument checked as a whole (save_workflow's graph), as REST's `error.details`. */
  error: { type: string; message: string; details?: Array<{ path: string; message: string }> };
}

export interface ToolDef {
  name: string;
  title?: string;
  description: string;
  /** JSON Schema (root type object); arguments are validated against it before the handler runs. */
  inputSchema: object;
  /** JSON Schema of a successful structuredContent; validated before it is sent. */
  outputSchema: object;
  annotations: { readOnlyHint: boolean; destructiveHint: boolean; openWorldHint: boolean; idempotentHint?: boolean };
  /**
   * Optional parse after the JSON Schema check (e.g. `(a) => v.parse(Input, a)` to apply valibot defaults and
   * transforms); what it returns is what the handler gets, and a throw becomes an invalid_request tool error.
   */
  parse?(args: unknown): unknown;
  /**
   * Checks the arguments before the JSON Schema check, in the API's wording (REST's `field: message`);
   * undefined when they pass. defineTool sets it from the tool's valibot schema.
   */
  checkArgs?(args: unknown): string | undefined;
  /**
   * The handler checks the arguments itself (skipping the JSON Schema check), because it reports
   * every problem with a pointer (`details`) where the schema check would stop at a summary.
   */
  checksArguments?: boolean;
  handler(ctx: ToolContext, args: any): Promise<{ structuredContent: object; text: string } | ToolError>;
}

/** What a request resolved to before the protocol runs; the account is looked up lazily on tools/call. */
export interface Principal {
  identity: Identity;
  requestId: string;
  /** The HTTP request's server span, when tracing is on. */
  span?: Span;
  resolveAccount(): Promise<string | null>;
  signal?: AbortSignal;
}

export interface ToolServerOptions {
  serverInfo: { name: string; version: string };
  instructions?: string;
  supportedProtocolVersions: string[];
  onError?: (err: unknown, info: { requestId: string; tool?: string }) => void;
}

/** The error envelope every tool may return as structuredContent alongside isError: true. */
export const TOOL_ERROR_SCHEMA = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        type: { type: 'string' },
        message: { type: 'string' },
        details: {
          type: 'array',
          items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } }, required: ['path', 'message'] },
        },
      },
      required: ['type', 'message'],
    },
  },
  required: ['error'],
};

type Validator = (value: unknown) => Promise<string | undefined>;

function compile(schema: Record<string, unknown>): Validator {
  const std = fromJsonSchema(schema)['~standard'];
  return async (value) => {
    const r = await std.validate(value);
    return r.issues ? r.issues.map((i) => i.message).join('; ') : undefined;
  };
}

/**
 * Advertised outputSchema = the tool's success schema OR the error envelope. Needed because SDK 1.x clients
 * validate structuredContent against outputSchema even on isError results; `$schema`/`$defs` stay at the root
 * so local `$ref`s keep resolving.
 */
function advertisedOutputSchema(schema: Record<string, unknown>): Record<string, unknown> {
  const { $schema, $defs, definitions, $id, ...rest } = schema;
  return {
    ...($schema !== undefined && { $schema }),
    ...($id !== undefined && { $id }),
    type: 'object',
    ...($defs !== undefined && { $defs }),
    ...(definitions !== undefined && { definitions }),
    anyOf: [rest, TOOL_ERROR_SCHEMA],
  };
}

export function toolError(type: string, message: string, details?: ToolError['error']['details']): CallToolResult {
  // The text lists every detail too: what a model reads when it ignores structuredContent.
  const text = details?.length ? [message, ...details.map((d) => `- ${d.path || '(arguments)'}: ${d.message}`)].join('\n') : message;
  return { content: [{ type: 'text', text }], structuredContent: { error: details ? { type, message, details } : { type, message } }, isError: true };
}

export function unlinkedMessage(identity: Identity): string {
  return (
    `This sign-in (issuer ${identity.iss}, subject ${identity.sub}${identity.email ? `, ${identity.email}` : ''}) ` +
    `is not linked to a Kiln account. Ask the Kiln administrator to run: ` +
    `kiln identity link --user <USER_ID> --issuer ${identity.iss} --subject ${identity.sub}`
  );
}

interface CompiledTool {
  def: ToolDef;
  listed: Tool;
  outputSchema: Record<string, unknown>;
  validateInput: Validator;
  validateOutput: Validator;
}

/** Compiles the tool list once; returns a factory building a fresh SDK Server per HTTP request. */
export function createToolServerFactory(tools: ToolDef[], opts: ToolServerOptions) {
  const compiled = new Map<string, CompiledTool>();
  for (const def of tools) {
    const inputSchema = def.inputSchema as Record<string, unknown>;
    if (compiled.has(def.name)) throw new Error(`duplicate MCP tool name ${def.name}`);
    if (inputSchema.type !== 'object') throw new Error(`MCP tool ${def.name}: inputSchema root must be type object`);
    const outputSchema = advertisedOutputSchema(def.outputSchema as Record<string, unknown>);
    const listed = {
      name: def.name,
      ...(def.title !== undefined && { title: def.title }),
      description: def.description,
      inputSchema,
      outputSchema,
      annotations: { ...(def.title !== undefined && { title: def.title }), ...def.annotations },
    } as Tool;
    compiled.set(def.name, {
      def,
      listed,
      outputSchema,
      validateInput: compile(inputSchema),
      validateOutput: compile(def.outputSchema as Record<string, unknown>),
    });
  }
  const listedTools = [...compiled.values()].map((t) => t.listed);

  return (principal: Principal): Server => {
    const server = new Server(opts.serverInfo, {
      capabilities: { tools: { listChanged: false } },
      supportedProtocolVersions: opts.supportedProtocolVersions,
      ...(opts.instructions !== undefined && { instructions: opts.instructions }),
    });
    server.setRequestHandler('tools/list', async () => ({ tools: listedTools }));
    server.setRequestHandler('tools/call', async (request, rctx) => {
      const { name, arguments: args } = request.params;
      const tool = compiled.get(name);
      if (!tool) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`);
      const token = request.params._meta?.progressToken;
      const progress = token === undefined ? undefined : (p: number, message?: string) => {
        rctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: p, ...(message ? { message } : {}) } }).catch(() => {
          // The client went away: the call's own answer reports what matters.
        });
      };
      const result = await observeToolCall(tool.def.name, principal.span, (span) => callTool(tool, args ?? {}, principal, opts, span, progress));
      return server.projectCallToolResult(result, tool.outputSchema);
    });
    return server;
  };
}

/** kiln_mcp_tool_calls_total, kiln_rejections_total for refused calls, and a `tools/call <tool>` span. */
function observeToolCall(name: string, parent: Span | undefined, call: (span: Span | undefined) => Promise<CallToolResult>): Promise<CallToolResult> {
  return withSpan(`tools/call ${name}`, { parent, attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': name } }, async (span) => {
    let result: CallToolResult;
    try {
      result = await call(span);
    } catch (e) {
      countToolCall(name, 'exception');
      throw e;
    }
    if (result.isError) {
      const type = (result.structuredContent as { error?: { type?: unknown } } | undefined)?.error?.type;
      const code = typeof type === 'string' ? type : 'error';
      countToolCall(name, 'error');
      countRejection(code);
      failSpan(span, null, code);
    } else {
      countToolCall(name, 'ok');
    }
    return result;
  });
}

async function callTool(
  tool: CompiledTool, args: unknown, principal: Principal, opts: ToolServerOptions, span: Span | undefined, progress?: ToolContext['progress'],
): Promise<CallToolResult> {
  const { requestId } = principal;
  const report = (err: unknown) => opts.onError?.(err, { requestId, tool: tool.def.name });
  // Before any SQL, as for REST bodies (the SDK parses the JSON-RPC body itself).
  const unstorable = unstorableValue(args, { root: 'arguments' });
  if (unstorable) return toolError('invalid_request', `Invalid arguments for ${tool.def.name}: ${unstorable}`);
  const problem = tool.def.checksArguments ? undefined : (tool.def.checkArgs?.(args) ?? await tool.validateInput(args));
  if (problem) return toolError('invalid_request', `Invalid arguments for ${tool.def.name}: ${problem}`);
  if (tool.def.parse) {
    try {
      args = tool.def.parse(args);
    } catch (err) {
      return toolError('invalid_request', `Invalid arguments for ${tool.def.name}: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  let out: Awaited<ReturnType<ToolDef['handler']>>;
  try {
    const accountId = await principal.resolveAccount();
    if (!accountId) return toolError('unauthorized', unlinkedMessage(principal.identity));
    out = await tool.def.handler({ accountId, identity: principal.identity, requestId, signal: principal.signal, span, ...(progress ? { progress } : {}) }, args);
  } catch (err) {
    report(err);
    return toolError('server_error', `Internal error while running ${tool.def.name} (request ${requestId}).`);
  }
  if ('error' in out) return toolError(out.error.type, out.error.message, out.error.details);
  const invalid = await tool.validateOutput(out.structuredContent);
  if (invalid) {
    report(new Error(`MCP tool ${tool.def.name} produced structuredContent not matching its outputSchema: ${invalid}`));
    return toolError('server_error', `Internal error while running ${tool.def.name} (request ${requestId}).`);
  }
  return { content: [{ type: 'text', text: out.text }], structuredContent: out.structuredContent as Record<string, unknown> };
}
