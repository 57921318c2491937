// Official MCP conformance suite (@modelcontextprotocol/conformance, offline) against the MCP route with auth
// disabled: every scenario is classified as applicable (must pass) or not applicable to a stateless tools-only server.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startMcpApp, type TestApp } from './_issuer.ts';
import { createAccount, startServer, type TestServer } from './_setup.ts';
import type { ToolDef } from '../src/mcp/server.ts';
import { mountMcp } from '../src/mcp/mount.ts';
import { mountFiles } from '../src/http/files.ts';

/** Scenarios a stateless, tools-only server must pass (the suite's fixture tools are registered below). */
const APPLICABLE = [
  'server-initialize',
  'ping',
  'tools-list',
  'tools-call-simple-text',
  'tools-call-error',
  'json-schema-2020-12',
  'dns-rebinding-protection',
];

/** Scenarios that do not apply, and why. A scenario in neither list fails the test (forces a decision on upgrade). */
const NOT_APPLICABLE: Record<string, string> = {
  'logging-set-level': 'no logging capability (deprecated in 2026-07-28, SEP-2577); Kiln logs server-side',
  'tools-call-with-logging': 'no logging capability',
  'tools-call-with-progress': 'tools return at once (generation is a pending job polled with get_generation); no progress',
  'completion-complete': 'no prompts or resource templates, so no completions capability',
  'tools-call-image': 'tool results are text + structuredContent; images are returned as URLs',
  'tools-call-audio': 'tool results are text + structuredContent',
  'tools-call-embedded-resource': 'tool results are text + structuredContent',
  'tools-call-mixed-content': 'tool results are text + structuredContent',
  'tools-call-sampling': 'server→client requests need a session back-channel; stateless (and replaced by input_required in 2026-07-28)',
  'tools-call-elicitation': 'server→client requests need a session back-channel; stateless',
  'elicitation-sep1034-defaults': 'elicitation needs a session back-channel; stateless',
  'elicitation-sep1330-enums': 'elicitation needs a session back-channel; stateless',
  'server-sse-polling': 'needs Mcp-Session-Id + GET SSE resumption; stateless (scenario only warns)',
  'server-sse-multiple-streams': 'needs Mcp-Session-Id + GET SSE streams; stateless (scenario only warns)',
  'resources-list': 'tools-only server',
  'resources-read-text': 'tools-only server',
  'resources-read-binary': 'tools-only server',
  'resources-templates-read': 'tools-only server',
  'resources-subscribe': 'tools-only server',
  'resources-unsubscribe': 'tools-only server',
  'prompts-list': 'tools-only server',
  'prompts-get-simple': 'tools-only server',
  'prompts-get-with-args': 'tools-only server',
  'prompts-get-embedded-resource': 'tools-only server',
  'prompts-get-with-image': 'tools-only server',
};

/** The suite (0.1.16) knows these spec versions for servers; it has no 2026-07-28 scenarios (covered in mcp.protocol.test.ts). */
const SPEC_VERSIONS = ['2025-06-18', '2025-11-25'];

const annotations = { readOnlyHint: true, destructiveHint: false, openWorldHint: false };
const fixtureTools: ToolDef[] = [
  {
    name: 'test_simple_text',
    description: 'Conformance fixture: returns simple text.',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    annotations,
    async handler() {
      const text = 'This is a simple text response for testing.';
      return { structuredContent: { text }, text };
    },
  },
  {
    name: 'test_error_handling',
    description: 'Conformance fixture: always fails.',
    inputSchema: { type: 'object', properties: {} },
    outputSchema: { type: 'object', properties: {} },
    annotations,
    async handler() {
      return { error: { type: 'test_error', message: 'This tool intentionally returns an error for testing' } };
    },
  },
  {
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: { address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' } } } },
      properties: { name: { type: 'string' }, address: { $ref: '#/$defs/address' } },
      additionalProperties: false,
    },
    outputSchema: { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] },
    annotations,
    async handler() {
      return { structuredContent: { ok: true }, text: 'ok' };
    },
  },
];

/**
 * conformance 0.1.16 imports fs.globSync (Node 22+) at load time but only uses it in `tier-check`; on Node 20
 * a resolve hook hands it node:fs plus a throwing globSync. Inline data: URLs keep this test self-contained.
 */
const FS_SHIM = `data:text/javascript,${encodeURIComponent("export * from 'node:fs'; export function globSync() { throw new Error('globSync requires Node 22'); }")}`;
const HOOKS = `export async function resolve(specifier, context, next) {
  if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL?.includes('/@modelcontextprotocol/conformance/')) return { url: ${JSON.stringify(FS_SHIM)}, shortCircuit: true };
  return next(specifier, context);
}`;
const REGISTER = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(`data:text/javascript,${encodeURIComponent(HOOKS)}`)});`)}`;
const CLI = createRequire(import.meta.url).resolve('@modelcontextprotocol/conformance/package.json').replace(/package\.json$/, 'dist/index.js');

interface ScenarioResult {
  success: number;
  failure: number;
  failures: string[];
}

async function runSuite(url: string, specVersion: string, outDir: string): Promise<Map<string, ScenarioResult>> {
  const child = spawn(process.execPath, ['--import', REGISTER, CLI, 'server', '--url', url, '--suite', 'all', '--spec-version', specVersion, '-o', outDir], {
    stdio: ['ignore', 'pipe', 'pipe'],
    timeout: 120_000,
  });
  let output = '';
  child.stdout.on('data', (d) => (output += d));
  child.stderr.on('data', (d) => (output += d));
  await new Promise((resolve) => child.on('close', resolve));
  assert.match(output, /=== SUMMARY ===/, `conformance run did not complete:\n${output.slice(-4000)}`);

  const results = new Map<string, ScenarioResult>();
  for (const dir of await readdir(outDir)) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T/.exec(dir);
    if (!m) continue;
    const checks = JSON.parse(await readFile(join(outDir, dir, 'checks.json'), 'utf8')) as { id: string; status: string; errorMessage?: string }[];
    results.set(m[1]!, {
      success: checks.filter((c) => c.status === 'SUCCESS').length,
      failure: checks.filter((c) => c.status === 'FAILURE').length,
      failures: checks.filter((c) => c.status === 'FAILURE').map((c) => `${c.id}: ${c.errorMessage ?? ''}`),
    });
  }
  return results;
}

describe('MCP conformance suite (auth disabled, stateless, tools only)', () => {
  let app: TestApp;
  let workDir: string;
  before(async () => {
    app = await startMcpApp({ tools: fixtureTools });
    workDir = await mkdtemp(join(tmpdir(), 'kiln-conformance-'));
  });
  after(async () => {
    await app.close();
    await rm(workDir, { recursive: true, force: true });
  });

  for (const specVersion of SPEC_VERSIONS) {
    test(`spec ${specVersion}: applicable scenarios pass, the rest are accounted for`, async () => {
      const results = await runSuite(app.mcpUrl, specVersion, join(workDir, specVersion));
      assert.ok(results.size > 0, 'no scenario results');
      const unclassified = [...results.keys()].filter((s) => !APPLICABLE.includes(s) && !(s in NOT_APPLICABLE));
      assert.deepEqual(unclassified, [], 'new conformance scenarios: classify them in this file');
      for (const name of APPLICABLE) {
        const r = results.get(name);
        if (!r) continue; // not part of this spec version
        assert.equal(r.failure, 0, `${name} failed: ${r.failures.join(' | ')}`);
        assert.ok(r.success > 0, `${name} made no successful check`);
      }
      const ran = APPLICABLE.filter((s) => results.has(s));
      assert.ok(ran.includes('server-initialize') && ran.includes('tools-call-error'), `core scenarios missing: ${ran.join(', ')}`);
      if (specVersion === '2025-11-25') assert.ok(ran.includes('json-schema-2020-12') && ran.includes('dns-rebinding-protection'));
    });
  }
});

/**
 * The same suite against the real Kiln app (h3 server, Postgres, the nine tools), with the MCP route's
 * test-only auth bypass standing in for a token. Scenarios that call the suite's fixture tools
 * (test_simple_text, test_error_handling, json_schema_2020_12_tool) cannot pass against Kiln's tools;
 * they run against the fixture app above with the very same route.
 */
const APPLICABLE_REAL = ['server-initialize', 'ping', 'tools-list', 'dns-rebinding-protection'];
const FIXTURE_ONLY = ['tools-call-simple-text', 'tools-call-error', 'json-schema-2020-12'];

describe('MCP conformance suite against the real Kiln app (auth disabled for this test only)', () => {
  let srv: TestServer;
  let workDir: string;
  before(async () => {
    const identity = { iss: 'urn:kiln:conformance', sub: 'suite' };
    srv = await startServer({ extend: [mountFiles, (app, ctx) => mountMcp(app, ctx, { testOnlyDisableAuth: identity })] });
    const acct = await createAccount(srv.db.sql);
    await srv.db.sql`select kiln.link_identity(${identity.iss}, ${identity.sub}, ${acct.id}::uuid, null, null)`;
    workDir = await mkdtemp(join(tmpdir(), 'kiln-conformance-real-'));
  });
  after(async () => {
    await srv.close();
    await rm(workDir, { recursive: true, force: true });
  });

  test('both spec versions: the scenarios that apply to Kiln\'s own tools pass', async () => {
    const runs = await Promise.all(SPEC_VERSIONS.map((v) => runSuite(`${srv.origin}/mcp`, v, join(workDir, v))));
    for (const [i, results] of runs.entries()) {
      const unclassified = [...results.keys()].filter((s) => !APPLICABLE_REAL.includes(s) && !FIXTURE_ONLY.includes(s) && !(s in NOT_APPLICABLE));
      assert.deepEqual(unclassified, [], `${SPEC_VERSIONS[i]}: new conformance scenarios: classify them in this file`);
      for (const name of APPLICABLE_REAL) {
        const r = results.get(name);
        if (!r) continue;
        assert.equal(r.failure, 0, `${SPEC_VERSIONS[i]} ${name} failed: ${r.failures.join(' | ')}`);
        assert.ok(r.success > 0, `${SPEC_VERSIONS[i]} ${name} made no successful check`);
      }
      assert.ok(results.has('server-initialize') && results.has('tools-list'), `${SPEC_VERSIONS[i]}: core scenarios missing`);
    }
  });
});
