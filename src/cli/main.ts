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
    '5 the job failed (a watched batch canceled or expired), 6 service unavailable after retries,',
    '130 interrupted (the job is canceled; a batch goes on).',
    '',
  ].join('\n');
}

/** `--help` or `-h` among a command's arguments (before a `--`, after which everything is positional). */
function asksHelp(args: string[]): boolean {
  const end = args.indexOf('--');
  return (end < 0 ? args : args.slice(0, end)).some((a) => a === '--help' || a === '-h');
}

/** One operator command's usage: its arguments on the usage line, or its description below it. */
function usageOf(name: string, command: Command): string {
  return /^[-[<]/.test(command.help) ? `usage: kiln ${name} ${command.help}\n` : `usage: kiln ${name}\n  ${command.help}\n`;
}

export async function main(argv: string[]): Promise<number> {
  // `kiln usage --user ID` is the operator command (the database); `kiln usage [--daily]` the user one (the API).
  const operatorUsage = argv[0] === 'usage' && argv.some((a) => /^--(user|workspace)(=|$)/.test(a));
  // `kiln workflow save|get|rm` are the user's (the API); `kiln workflow import|export` the operator's (the database).
  const operatorWorkflow = argv[0] === 'workflow' && (argv[1] === 'import' || argv[1] === 'export');
  if (argv[0] && Object.hasOwn(userCommands, argv[0]) && !operatorUsage && !operatorWorkflow) {
    const code = await runUserCommand(argv[0], argv.slice(1));
    if (code === 0 && asksHelp(argv)) {
      // `kiln usage` and `kiln workflow` have operator forms too: their usage follows.
      const { commands } = await import('./commands.ts');
      const same = Object.keys(commands).filter((n) => n === argv[0] || n.startsWith(`${argv[0]} `)).sort();
      if (same.length) process.stdout.write(`operator form (the database):\n${same.map((n) => usageOf(n, commands[n]!)).join('')}`);
    }
    return code;
  }
  // Operator commands load the database layer: only when one is asked for.
  const { commands } = await import('./commands.ts');
  // Longest matching command name (e.g. "workspace member add" before "workspace").
  let match: string | undefined;
  for (let n = Math.min(3, argv.length); n > 0 && !match; n--) {
    const candidate = argv.slice(0, n).join(' ');
    if (Object.hasOwn(commands, candidate)) match = candidate;
  }
  const topHelp = argv[0] === 'help' || argv[0] === '--help' || argv[0] === '-h';
  if (!topHelp && asksHelp(argv)) {
    // `kiln <command> --help`: its usage; `kiln <group> --help` (e.g. `kiln workspace`): each of its commands'.
    if (match && (!commands[match]!.passthrough || asksHelp(argv.slice(match.split(' ').length, match.split(' ').length + 1)))) {
      process.stdout.write(usageOf(match, commands[match]!));
      return 0;
    }
    const words = argv.slice(0, argv.findIndex((a) => a.startsWith('-'))).join(' ');
    const group = words ? Object.keys(commands).filter((n) => n.startsWith(`${words} `)).sort() : [];
    if (!match && group.length) {
      process.stdout.write(group.map((n) => usageOf(n, commands[n]!)).join(''));
      return 0;
    }
  }
  if (!match || topHelp) {
    const text = help(commands);
    if (!match && argv.length && !topHelp) {
      process.stderr.write(`kiln: unknown command ${JSON.stringify(argv.join(' '))}\n\n${text}`);
      return 2;
    }
    process.stdout.write(text);
    return 0;
  }
  const rest = argv.slice(match.split(' ').length);
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
