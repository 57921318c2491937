// Arguments of the user commands: positionals, `--name value` / `--name=value`, `--flag`, and
// repeatable `--name value` lists. Anything else is a UsageError (exit code 2).

import { UsageError } from '../args.ts';

export type FlagKind = 'string' | 'boolean' | 'list';
type Value<K extends FlagKind> = K extends 'boolean' ? boolean : K extends 'list' ? string[] : string;
export type Flags<S extends Record<string, FlagKind>> = { [N in keyof S]?: Value<S[N]> };

export function parseArgs<S extends Record<string, FlagKind>>(
  argv: string[],
  spec: S,
  positionals: { min: number; max: number; names: string },
): { flags: Flags<S>; args: string[] } {
  const flags: Record<string, string | boolean | string[]> = {};
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const m = /^--([a-z][a-z0-9-]*)(?:=([\s\S]*))?$/.exec(a);
    if (!m) {
      if (a.startsWith('-') && a !== '-') throw new UsageError(`unknown option ${a}`);
      args.push(a);
      continue;
    }
    const [, name, inline] = m as unknown as [string, string, string | undefined];
    const kind = spec[name];
    if (!kind) throw new UsageError(`unknown option --${name}`);
    if (kind === 'boolean') {
      if (inline !== undefined && !/^(true|false)$/.test(inline)) throw new UsageError(`--${name} takes no value`);
      flags[name] = inline !== 'false';
      continue;
    }
    const value = inline ?? argv[++i];
    if (value === undefined || value === '') throw new UsageError(`--${name} needs a value`);
    if (kind === 'list') ((flags[name] ??= []) as string[]).push(value);
    else if (flags[name] !== undefined) throw new UsageError(`--${name} is given twice`);
    else flags[name] = value;
  }
  if (args.length < positionals.min) throw new UsageError(`missing ${positionals.names}`);
  if (args.length > positionals.max) throw new UsageError(`unexpected argument ${JSON.stringify(args[positionals.max])}`);
  return { flags: flags as Flags<S>, args };
}

/** A whole number flag within bounds, or undefined when absent. */
export function intFlag(value: string | undefined, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!/^\d{1,12}$/.test(value) || Number(value) < min || Number(value) > max) throw new UsageError(`--${name} must be a whole number from ${min} to ${max}`);
  return Number(value);
}

export function oneOf<T extends string>(value: string | undefined, name: string, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw new UsageError(`--${name} must be one of ${allowed.join(', ')}`);
  return value as T;
}
