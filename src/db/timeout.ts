// Time bounds on database calls: a call that takes too long is cancelled and rejected with code
// KILN_TIMEOUT (errors.ts isUnavailable: a 503, never a pass, never retried per item).

/** Rejects when `p` takes longer than `ms`; a cancellable postgres.js query is cancelled. */
export async function withTimeout<T>(p: Promise<T> & { cancel?: () => unknown }, ms: number): Promise<T> {
  if (!Number.isFinite(ms)) return p;
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      try { p.cancel?.(); } catch { /* already done */ }
      reject(Object.assign(new Error('timed out'), { code: 'KILN_TIMEOUT' }));
    }, ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
