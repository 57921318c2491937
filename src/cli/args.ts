// Tiny flag parser for the CLI: `--name value` and `--flag`; unknown flags are errors.

export class UsageError extends Error {}

export function parseFlags(argv: string[], spec: Record<string, 'string' | 'boolean'>): Record<string, string | boolean | undefined> {
  const out: Record<string, string | boolean | undefined> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const m = /^--([a-z][a-z0-9-]*)(?:=(.*))?$/.exec(a);
    if (!m) throw new UsageError(`unexpected argument ${JSON.stringify(a)}`);
    const [, name, inline] = m;
    const kind = spec[name];
    if (!kind) throw new UsageError(`unknown option --${name}`);
    if (kind === 'boolean') {
      out[name] = inline === undefined ? true : inline !== 'false';
    } else {
      const val = inline ?? argv[++i];
      if (val === undefined) throw new UsageError(`--${name} needs a value`);
      out[name] = val;
    }
  }
  return out;
}

export function required(flags: Record<string, unknown>, name: string): string {
  const v = flags[name];
  if (typeof v !== 'string' || v === '') throw new UsageError(`--${name} is required`);
  return v;
}

export function uuidFlag(flags: Record<string, unknown>, name: string, opt = false): string | null {
  const v = flags[name];
  if (v === undefined && opt) return null;
  const s = required(flags, name);
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
