// CLI entry: `kiln <command>`. Every command prints JSON on stdout; errors go to stderr
// with a non-zero exit code.

import { loadConfig } from '../config.ts';
import { UsageError } from './args.ts';
import { commands } from './commands.ts';

const HELP = `kiln — self-hostable AI image and code generation service

Usage: kiln <command> [options]

${'' /* filled in below */}`;

export async function main(argv: string[]): Promise<number> {
  const names = Object.keys(commands).sort();
  // Longest matching command name (e.g. "workspace member add" before "workspace").
  let match: string | undefined;
  for (let n = Math.min(3, argv.length); n > 0 && !match; n--) {
    const candidate = argv.slice(0, n).join(' ');
    if (commands[candidate]) match = candidate;
  }
  if (!match || argv[0] === 'help' || argv[0] === '--help') {
    const lines = names.map((n) => `  kiln ${n.padEnd(24)} ${commands[n].help}`);
    const text = HELP + lines.join('\n') + '\n';
    if (!match && argv.length && argv[0] !== 'help' && argv[0] !== '--help') {
      process.stderr.write(`kiln: unknown command ${JSON.stringify(argv.join(' '))}\n\n${text}`);
      return 2;
    }
    process.stdout.write(text);
    return 0;
  }
  const rest = argv.slice(match.split(' ').length);
  try {
    const config = loadConfig();
    const result = await commands[match].run(rest, config);
    if (result !== undefined) process.stdout.write(JSON.stringify(result, jsonReplacer, 2) + '\n');
    return 0;
  } catch (err) {
    const e = err as { code?: unknown; message?: string } | null;
    if (err instanceof UsageError) {
      process.stderr.write(`kiln ${match}: ${err.message}\n  ${commands[match].help}\n`);
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
