// The one argument parser of every `kiln` command, operator and user alike: node:util parseArgs
// splits argv into tokens; the rules below turn them into values or a UsageError (exit code 2).
//
// A command declares its options the way parseArgs does, and calls `parseArgs` first thing:
//
//   const { values, positionals } = parseArgs(argv, {
//     options: { to: { type: 'string' }, daily: { type: 'boolean' }, image: { type: 'string', multiple: true } },
//     positionals: { min: 1, max: 1, names: 'WORKFLOW_ID' }, // omit when the command takes none
//   });
//   values.to      // string | undefined
//   values.daily   // boolean | undefined
//   values.image   // string[] | undefined
//
// The rules (the operator commands' ones from before the two parsers were merged, kept so that
// scripts keep working — test/cli.args.test.ts):
// - `--name value` and `--name=value`; the value may start with a dash. An empty value is refused
//   (`--out ""` is an unset shell variable more often than a choice) unless declared `allowEmpty`.
// - `--flag`, `--flag=true`, `--flag=false`.
// - An option given twice: the last one counts, unless it is declared `multiple` (a list).
// - An unknown option, a missing value, or a positional the command does not take: UsageError.
// - `--` ends the options: what follows is positional.
// Checking values (required, a uuid, one of a list, a number in bounds) is the helpers' job below.

import { parseArgs as tokenize } from 'node:util';

export class UsageError extends Error {}

export interface OptionSpec {
  type: 'string' | 'boolean';
  /** Repeatable: every value is kept, in order (`--image a --image b` → ['a', 'b']). */
  multiple?: boolean;
  /** A one-letter alias (`-o`). */
  short?: string;
  /** `--name ""` is a value (for a string), not a mistake. */
  allowEmpty?: boolean;
}

export interface ArgSpec {
  options: Record<string, OptionSpec>;
  /** How many positionals the command takes, and what they are (for the error). None when omitted. */
  positionals?: { min: number; max: number; names: string };
}

type ValueOf<O extends OptionSpec> = (O['type'] extends 'boolean' ? boolean : string) extends infer V
  ? O['multiple'] extends true ? V[] : V
  : never;

/** The parsed options: each one absent (undefined) unless given. */
export type Values<O extends Record<string, OptionSpec>> = { [N in keyof O]?: ValueOf<O[N]> };

export function parseArgs<const S extends ArgSpec>(argv: string[], spec: S): { values: Values<S['options']>; positionals: string[] } {
  // strict: false — parseArgs' strict mode refuses a value that starts with a dash (`--name -x`),
  // which the commands accept; the unknown options are refused below instead.
  // parseArgs' own config only: it refuses keys it does not know (allowEmpty).
  const options = Object.fromEntries(Object.entries(spec.options).map(([name, { allowEmpty: _, ...config }]) => [name, config]));
  const { tokens } = tokenize({ args: argv, options, strict: false, tokens: true });
  const values: Record<string, string | boolean | Array<string | boolean>> = {};
  const positionals: string[] = [];
  for (const t of tokens) {
    if (t.kind === 'positional') {
      positionals.push(t.value);
      continue;
    }
    if (t.kind === 'option-terminator') continue;
    const option = Object.hasOwn(spec.options, t.name) ? spec.options[t.name]! : undefined;
    if (!option) throw new UsageError(`unknown option ${t.rawName}`);
    let value: string | boolean;
    if (option.type === 'boolean') {
      if (t.value !== undefined && t.value !== 'true' && t.value !== 'false') throw new UsageError(`${t.rawName} takes no value`);
      value = t.value !== 'false';
    } else {
      if (t.value === undefined || (t.value === '' && !option.allowEmpty)) throw new UsageError(`${t.rawName} needs a value`);
      value = t.value;
    }
    if (option.multiple) ((values[t.name] ??= []) as Array<string | boolean>).push(value);
    else values[t.name] = value;
  }
  const { min, max, names } = spec.positionals ?? { min: 0, max: 0, names: '' };
  if (positionals.length > max) throw new UsageError(`unexpected argument ${JSON.stringify(positionals[max])}`);
  if (positionals.length < min) throw new UsageError(`missing ${names}`);
  return { values: values as Values<S['options']>, positionals };
}

export function required(values: Record<string, unknown>, name: string): string {
  const v = values[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function uuidFlag(values: Record<string, unknown>, name: string, opt = false): string | null {
  const v = values[name];
  if (v === undefined && opt) return null;
  const s = required(values, name);
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)) throw new UsageError(`--${name} must be a uuid`);
  return s;
}

/** A non-negative integer amount, or null for "unlimited" when allowed. */
export function microsFlag(v: unknown, name: string, allowUnlimited: boolean): bigint | null | undefined {
  if (v === undefined) return undefined;
  if (allowUnlimited && v === 'unlimited') return null;
  if (typeof v !== 'string' || !/^\d{1,18}$/.test(v)) {
    throw new UsageError(`--${name} must be a whole number of microdollars${allowUnlimited ? ' or "unlimited"' : ''}`);
  }
  return BigInt(v);
}

/** A whole number within bounds, or undefined when absent. */
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
