// Exit codes of the user commands, and the client they share: KILN_URL and KILN_API_KEY through
// the typed client (kiln/client), never the database.

import { ConfigError, loadClientConfig } from '../../config.ts';
import { createKilnClient, KilnError, type KilnClient } from '../../client/index.ts';
import { UsageError } from '../args.ts';

export const EXIT = {
  ok: 0,
  /** Anything not below (a 409, a 500, a local I/O error). */
  error: 1,
  /** Bad arguments, including what the service refused as invalid (400) or could not find (404). */
  usage: 2,
  /** 401 or 403: the key is missing its scope, revoked or wrong. */
  auth: 3,
  /** 429 insufficient_quota or 402 payment_required: the budget, not the request. */
  quota: 4,
  /** The generation or run ended `failed`. */
  failed: 5,
  /** No answer, 503, or still rate limited, after the client's retries. */
  unavailable: 6,
  /** Ctrl-C (128 + SIGINT), after the job was canceled on the server. */
  interrupted: 130,
} as const;

export function exitCodeOf(e: unknown): number {
  if (e instanceof UsageError || e instanceof ConfigError) return EXIT.usage;
  if (!(e instanceof KilnError)) return EXIT.error;
  if (e.status === 401 || e.status === 403) return EXIT.auth;
  if (e.status === 402 || e.type === 'insufficient_quota') return EXIT.quota;
  if (e.status === 0 || e.status === 503 || e.type === 'rate_limited') return EXIT.unavailable;
  if (e.status === 400 || e.status === 404) return EXIT.usage;
  return EXIT.error;
}

/** For stderr: what failed and what the service said, on one line (then each of `error.details`, one per line). */
export function describe(e: unknown): string {
  if (e instanceof KilnError) {
    const id = e.requestId ? ` (request ${e.requestId})` : '';
    const hint = e.status === 401 ? ' — check KILN_API_KEY' : e.status === 0 ? ' — check KILN_URL' : '';
    // Every problem of a refused body, one per line under the message.
    const details = e.details.map((d) => `\n  ${d.path || '(body)'}: ${d.message}`).join('');
    return `${e.type}${e.status ? ` ${e.status}` : ''}: ${e.message}${id}${hint}${details}`;
  }
  return (e as Error)?.message ?? String(e);
}

export function clientFromEnv(): KilnClient {
  const c = loadClientConfig();
  if (!c.apiKey) throw new UsageError('set KILN_API_KEY to an API key (an operator creates one with `kiln key create`)');
  try {
    new URL(c.url);
  } catch {
    throw new UsageError(`KILN_URL is not a URL: ${JSON.stringify(c.url)}`);
  }
  return createKilnClient({ baseUrl: c.url, apiKey: c.apiKey, retry: { maxAttempts: c.attempts } });
}

/**
 * Ctrl-C (SIGINT, and SIGTERM alike): the first aborts `signal` — the command then cancels its job
 * on the server and exits with 130; a second one exits at once.
 */
export function interruptible(): { signal: AbortSignal; dispose(): void } {
  const ac = new AbortController();
  const handler = () => {
    if (ac.signal.aborted) {
      if (process.stdout.isTTY) process.stdout.write('\x1b[?25h\n'); // the live block hid the cursor
      process.exit(EXIT.interrupted);
    }
    ac.abort(new Interrupted());
  };
  process.on('SIGINT', handler);
  process.on('SIGTERM', handler);
  return {
    signal: ac.signal,
    dispose() {
      process.off('SIGINT', handler);
      process.off('SIGTERM', handler);
    },
  };
}

export class Interrupted extends Error {
  override name = 'AbortError';
  constructor() {
    super('interrupted');
  }
}
