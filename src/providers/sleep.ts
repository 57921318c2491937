// Abortable waits used by adapters (backoff, simulated latency); abort surfaces as ProviderError.

import { ProviderError } from './types.ts';

export function abortedError(cause?: unknown): ProviderError {
  return new ProviderError('generation was cancelled', { code: 'aborted', retryable: true, cause });
}

export function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortedError(signal.reason);
}

export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.reject(abortedError(signal.reason));
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(abortedError(signal.reason));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
