// The one argument parser (src/cli/args.ts) of both command groups: its rules on their own, and
// through `kiln` against a real database the operator invocations that worked before the two
// parsers were merged (a repeated option's last value, `--name=value`, an empty free-text value).

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { before, test } from 'node:test';
import { promisify } from 'node:util';
import { parseArgs, UsageError } from '../src/cli/args.ts';
import { createTestDb, type TestDb } from './_setup.ts';

const BIN = path.resolve(import.meta.dirname, '..', 'bin', 'kiln.js');

const refused = (fn: () => unknown, message: RegExp) => assert.throws(fn, (e) => e instanceof UsageError && message.test(e.message));

test('options as declared: strings, booleans, lists, `--name=value`, a value with a leading dash, `--`', () => {
  const spec = {
    options: { to: { type: 'string' }, daily: { type: 'boolean' }, image: { type: 'string', multiple: true }, out: { type: 'string', short: 'o' } },
    positionals: { min: 0, max: 2, names: 'A B' },
  } as const;
  assert.deepEqual(parseArgs(['--to', 's3', '--daily', '--image', 'a', '--image=b', '-o', 'f.png'], spec), {
    values: { to: 's3', daily: true, image: ['a', 'b'], out: 'f.png' },
    positionals: [],
  });
  assert.deepEqual(parseArgs(['--to=x=y', '--daily=false'], spec).values, { to: 'x=y', daily: false });
  assert.deepEqual(parseArgs(['--daily=true'], spec).values, { daily: true });
  // An option's value is the next argument, whatever it looks like (a prompt may start with a dash).
  assert.deepEqual(parseArgs(['--to', '-5 degrees', '--image', '--daily'], spec).values, { to: '-5 degrees', image: ['--daily'] });
  assert.deepEqual(parseArgs(['one', '--', '--daily'], spec), { values: {}, positionals: ['one', '--daily'] });
  assert.deepEqual(parseArgs(['-'], spec).positionals, ['-']);
  assert.deepEqual(parseArgs([], spec), { values: {}, positionals: [] });
});

test('a repeated option: the last one counts (as the operator commands always did); a list keeps all', () => {
  const spec = { options: { tier: { type: 'string' }, image: { type: 'string', multiple: true } } } as const;
  assert.deepEqual(parseArgs(['--tier', 'pro', '--tier=enterprise', '--image', 'a', '--image', 'a'], spec).values, { tier: 'enterprise', image: ['a', 'a'] });
});

test('refused: an unknown option, a missing or empty value, a value for a flag, positionals not taken', () => {
  const spec = { options: { email: { type: 'string' }, name: { type: 'string', allowEmpty: true }, json: { type: 'boolean' } } } as const;
  refused(() => parseArgs(['--colour', 'red'], spec), /^unknown option --colour$/);
  refused(() => parseArgs(['--colour=red'], spec), /^unknown option --colour$/);
  refused(() => parseArgs(['-x'], spec), /^unknown option -x$/);
  refused(() => parseArgs(['--email'], spec), /^--email needs a value$/);
  refused(() => parseArgs(['--email', ''], spec), /^--email needs a value$/);
  refused(() => parseArgs(['--email='], spec), /^--email needs a value$/);
  assert.deepEqual(parseArgs(['--name', ''], spec).values, { name: '' }, 'allowEmpty: an empty value is a value');
  refused(() => parseArgs(['--json=yes'], spec), /^--json takes no value$/);
  refused(() => parseArgs(['extra'], spec), /^unexpected argument "extra"$/);
  refused(() => parseArgs(['--email', 'a@b', 'extra'], spec), /^unexpected argument "extra"$/);
  // `__proto__` and friends are not options because they are properties of every object.
  refused(() => parseArgs(['--constructor', 'x'], spec), /^unknown option --constructor$/);
  const one = { options: {}, positionals: { min: 1, max: 1, names: 'WORKFLOW_ID' } } as const;
  refused(() => parseArgs([], one), /^missing WORKFLOW_ID$/);
  refused(() => parseArgs(['a', 'b'], one), /^unexpected argument "b"$/);
});

let db: TestDb;
before(async () => {
  db = await createTestDb();
});

async function kiln(args: string[]) {
  try {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], {
      env: { ...process.env, DATABASE_URL: db.url, KILN_LOG: 'silent' },
      timeout: 60_000,
    });
    return { code: 0, stdout: r.stdout, stderr: r.stderr, json: JSON.parse(r.stdout) };
  } catch (e: any) {
    return { code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string, json: undefined };
  }
}

test('operator commands: invocations that worked before the merge still do, the same way', async () => {
  // `--name=value`, and a repeated option whose last value counts.
  const user = await kiln(['user', 'create', '--email=compat@example.com', '--tier', 'pro', '--tier', 'enterprise']);
  assert.equal(user.code, 0, user.stderr);
  assert.equal(user.json.tier, 'enterprise');
  assert.equal(user.json.email, 'compat@example.com');
  // An empty --name (a script's unset variable) made a key with an empty name: it still does.
  const key = await kiln(['key', 'create', `--user=${user.json.id}`, '--rpm', '10', '--rpm', '20', '--name', '']);
  assert.equal(key.code, 0, key.stderr);
  assert.equal(key.json.rpm, 20);
  const [row] = await db.sql`select name, rpm from kiln_private.api_keys where id = ${key.json.id}`;
  assert.deepEqual({ ...row }, { name: '', rpm: 20 });
  // An identity linked with an empty --email likewise.
  const link = await kiln(['identity', 'link', '--user', user.json.id, '--issuer', 'https://issuer.example', '--subject', 's1', '--email', '']);
  assert.equal(link.code, 0, link.stderr);
  assert.equal(link.json.email, '');

  // What was refused is still refused, with exit code 2, nothing on stdout and the usage line.
  for (const [args, message] of [
    [['user', 'create', '--email'], /--email needs a value/],
    [['user', 'create', '--email', ''], /--email needs a value/],
    [['user', 'create', '--email', 'x@example.com', 'extra'], /unexpected argument "extra"/],
    [['user', 'create', '--email', 'x@example.com', '--colour', 'red'], /unknown option --colour/],
    [['model', 'list', '--json'], /unknown option --json/],
  ] as const) {
    const r = await kiln([...args]);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stdout, '');
    assert.match(r.stderr, message);
    assert.match(r.stderr, new RegExp(`^kiln ${args[0]} ${args[1]}: .*\\n  \\S`), 'the command and its usage');
  }
});

test('user commands refuse an empty value before calling the service (no file written to the working directory)', async () => {
  // KILN_URL points nowhere: a request would end in exit code 6, not 2.
  const env = { ...process.env, KILN_URL: 'http://127.0.0.1:9/', KILN_API_KEY: 'kiln_live_x', KILN_LOG: 'silent' };
  for (const args of [['generate', 'image', '--prompt', 'a fox', '--out', ''], ['generate', 'code', '--prompt', 'x', '--lang='], ['run', '--watch']]) {
    const r = await promisify(execFile)(process.execPath, [BIN, ...args], { env }).then(() => ({ code: 0, stderr: '' }), (e) => ({ code: e.code, stderr: e.stderr as string }));
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.match(r.stderr, /needs a value|missing WORKFLOW_ID/);
  }
});

test('every command, subcommand and group answers --help and -h with its usage on stdout and exit code 0', async () => {
  const { commands } = await import('../src/cli/commands.ts');
  const { userCommands } = await import('../src/cli/user/index.ts');
  // Nothing is reached: help needs neither the database nor the service.
  const env = { ...process.env, DATABASE_URL: 'postgres://kiln@127.0.0.1:9/none', KILN_URL: 'http://127.0.0.1:9/', KILN_API_KEY: 'kiln_live_x', KILN_LOG: 'silent' };
  const run = (args: string[]) => promisify(execFile)(process.execPath, [BIN, ...args], { env, timeout: 60_000 })
    .then((r) => ({ code: 0, stdout: r.stdout, stderr: r.stderr }), (e) => ({ code: e.code as number, stdout: e.stdout as string, stderr: e.stderr as string }));
  const cases: Array<{ args: string[]; expect: (out: string) => boolean }> = [];
  const top = (out: string) => out.startsWith('kiln — ') && out.includes('Operator commands');
  cases.push({ args: [], expect: top }, { args: ['help'], expect: top });
  for (const name of Object.keys(commands)) {
    const text = commands[name]!.help;
    // (`kiln usage` and `kiln workflow` answer with the user form, then the operator one.)
    cases.push({ args: name.split(' '), expect: (out) => out.includes(`usage: kiln ${name}${/^[-[<]/.test(text) ? ' ' : '\n  '}${text}\n`) });
  }
  // The user commands, and their subcommands (each answers with its command's usage, which names them).
  const userSubcommands: Record<string, string[]> = { generate: ['image', 'code'], workflow: ['save', 'get', 'rm'], keys: ['list', 'create', 'rotate', 'revoke'], batch: ['create', 'ls', 'get', 'results', 'cancel'] };
  for (const name of Object.keys(userCommands)) {
    const usage = `usage: kiln ${name} ${userCommands[name]!.help}\n`;
    cases.push({ args: [name], expect: (out) => out.startsWith(usage) });
    for (const sub of userSubcommands[name] ?? []) {
      assert.ok(userCommands[name]!.help.includes(sub), `${name}'s usage names ${sub}`);
      cases.push({ args: [name, sub], expect: (out) => out.startsWith(usage) });
    }
  }
  // Groups of operator commands (`kiln workspace`, `kiln workspace member`, …): the usage of each of theirs.
  const groups = new Set(Object.keys(commands).flatMap((n) => n.split(' ').slice(1).map((_, i) => n.split(' ').slice(0, i + 1).join(' '))));
  for (const group of groups) {
    if (Object.hasOwn(commands, group) || Object.hasOwn(userCommands, group)) continue;
    const members = Object.keys(commands).filter((n) => n.startsWith(`${group} `));
    cases.push({ args: group.split(' '), expect: (out) => out.trimEnd().split('\n').filter((l) => l.startsWith('usage: ')).length === members.length && members.every((n) => out.includes(`usage: kiln ${n} `) || out.includes(`usage: kiln ${n}\n`)) });
  }
  assert.ok(cases.length > 45, `${cases.length} cases`);
  const jobs = cases.flatMap(({ args, expect }) => [['--help'], ['-h']].map((flag) => ({ argv: [...args, ...flag], expect })));
  const failures: string[] = [];
  // Every list through the CLI's own entry point, in one process (test/fixtures/cli-help.ts): a
  // Node start per list took 100 s of the suite's budget. The real binary answers a few below.
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kiln-help-'));
  try {
    fs.writeFileSync(path.join(dir, 'jobs.json'), JSON.stringify(jobs.map((j) => j.argv)));
    await promisify(execFile)(process.execPath, ['--import', 'tsx', path.resolve(import.meta.dirname, 'fixtures', 'cli-help.ts'), path.join(dir, 'jobs.json'), path.join(dir, 'out.json')], { env, timeout: 120_000 });
    const results = JSON.parse(fs.readFileSync(path.join(dir, 'out.json'), 'utf8')) as Array<{ code: number; stdout: string; stderr: string }>;
    assert.equal(results.length, jobs.length);
    jobs.forEach(({ argv, expect }, i) => {
      const r = results[i]!;
      if (r.code !== 0 || !expect(r.stdout) || r.stderr !== '') failures.push(`kiln ${argv.join(' ')}: exit ${r.code}\n${r.stdout.slice(0, 300)}${r.stderr.slice(0, 300)}`);
    });
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
  // The binary itself, for a sample of each kind: top level, an operator command, a user command, a group.
  for (const argv of [['-h'], ['--help'], ['user', 'create', '-h'], ['generate', 'image', '--help'], ['workspace', 'member', '-h']]) {
    const job = jobs.find((j) => j.argv.join(' ') === argv.join(' '));
    const r = await run(argv);
    if (r.code !== 0 || r.stderr !== '' || (job && !job.expect(r.stdout))) failures.push(`bin/kiln.js ${argv.join(' ')}: exit ${r.code}\n${r.stdout.slice(0, 300)}${r.stderr.slice(0, 300)}`);
  }
  assert.deepEqual(failures, []);

  // `kiln keys`' usage names every scope, the default ones, and the unit of --grace.
  const keys = await run(['keys', 'create', '--help']);
  assert.match(keys.stdout, /create NAME \[--scopes read,write,keys,admin \(default read,write\)\]/);
  assert.match(keys.stdout, /rotate ID \[--grace SECONDS \(or 90m, 24h, 7d; default 24h\)\]/);

  // Help wherever it stands among the arguments; unknown commands stay unknown.
  const late = await run(['user', 'create', '--email', 'x@example.com', '-h']);
  assert.equal(late.code, 0);
  assert.match(late.stdout, /^usage: kiln user create --email E/);
  const unknown = await run(['frobnicate', '--help']);
  assert.equal(unknown.code, 2);
  assert.match(unknown.stderr, /unknown command "frobnicate --help"/);
});
