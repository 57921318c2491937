// CLI entry: `kiln <command>`. Two groups: user commands call a Kiln service's API with an API
// key (src/cli/user/); operator commands work on the database and run the service (commands.ts),
// print JSON on stdout, and report errors on stderr with a non-zero exit code.

import { UsageError } from './args.ts';
import type { Command } from './command.ts';
import { runUserCommand, userCommands } from './user/index.ts';

const HEADER = `kiln — self-hostable AI image and code generation service

Usage: kiln <command> [options]
`;

function help(operator: Record<string, Command>): string {
  const line = (name: string, text: string) => `  kiln ${name.padEnd(24)} ${text}`;
  return [
    HEADER,
    'User commands (call the API: KILN_URL, KILN_API_KEY):',
    ...Object.keys(userCommands).map((n) => line(n, userCommands[n]!.help)),
    '',
    'Operator commands (the database: DATABASE_URL, or the embedded cluster under KILN_DATA_DIR):',
    ...Object.keys(operator).sort().map((n) => line(n, operator[n]!.help)),
    '',
    'Exit codes of the user commands: 0 ok, 2 bad arguments, 3 auth (401/403), 4 quota or payment,',
    '5 the job failed, 6 service unavailable after retries, 130 interrupted (the job is canceled).',
    '',
  ].join('\n');
}

export async function main(argv: string[]): Promise<number> {
  // `kiln usage --user ID` is the operator command (the database); `kiln usage [--daily]` the user one (the API).
  const operatorUsage = argv[0] === 'usage' && argv.some((a) => /^--(user|workspace)(=|$)/.test(a));
  // `kiln workflow save|get|rm` are the user's (the API); `kiln workflow import|export` the operator's (the database).
  const operatorWorkflow = argv[0] === 'workflow' && (argv[1] === 'import' || argv[1] === 'export');
  if (argv[0] && Object.hasOwn(userCommands, argv[0]) && !operatorUsage && !operatorWorkflow) return runUserCommand(argv[0], argv.slice(1));
  // Operator commands load the database layer: only when one is asked for.
  const { commands } = await import('./commands.ts');
  // Longest matching command name (e.g. "workspace member add" before "workspace").
  let match: string | undefined;
  for (let n = Math.min(3, argv.length); n > 0 && !match; n--) {
    const candidate = argv.slice(0, n).join(' ');
    if (Object.hasOwn(commands, candidate)) match = candidate;
  }
  if (!match || argv[0] === 'help' || argv[0] === '--help') {
    const text = help(commands);
    if (!match && argv.length && argv[0] !== 'help' && argv[0] !== '--help') {
      process.stderr.write(`kiln: unknown command ${JSON.stringify(argv.join(' '))}\n\n${text}`);
      return 2;
    }
    process.stdout.write(text);
    return 0;
  }
  const rest = argv.slice(match.split(' ').length);
  const options = rest.includes('--') ? rest.slice(0, rest.indexOf('--')) : rest;
  if (options.includes('--help') || options.includes('-h')) {
    process.stdout.write(`usage: kiln ${match} ${commands[match]!.help}\n`);
    return 0;
  }
  const { loadConfig } = await import('../config.ts');
  try {
    const config = loadConfig();
    const result = await commands[match]!.run(rest, config);
    if (result !== undefined) process.stdout.write(JSON.stringify(result, jsonReplacer, 2) + '\n');
    return 0;
  } catch (err) {
    const e = err as { code?: unknown; message?: string } | null;
    if (err instanceof UsageError) {
      process.stderr.write(`kiln ${match}: ${err.message}\n  ${commands[match]!.help}\n`);
      return 2;
    }
    const msg = typeof e?.code === 'string' && /^K[A-Z]\d{3}$/.test(e.code) ? e.message : e?.message ?? String(err);
    process.stderr.write(`kiln ${match}: ${msg}\n`);
    return 1;
  }
}

export function jsonReplacer(_k: string, v: unknown) {
  if (typeof v === 'bigint') return Number.isSafeInteger(Number(v)) ? Number(v) : v.toString();
  if (Buffer.isBuffer(v)) return undefined;
  return v;
}
