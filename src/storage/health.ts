// Whether the object store's bucket answers (docs/storage.md, "When the store is down"). Every
// bucket call reports its outcome here; "down" comes from real failures only — no answer (refused,
// reset, timed out), a 5xx or throttling — never from a 404 of a missing object or another 4xx,
// which are answers. When nothing was heard for a while, a check asks the bucket itself (a HEAD of
// a key that need not exist). Read by /readyz, kiln_store_up, the generation run, the sweep and
// `kiln store migrate`. No AWS SDK import here: it is loaded only with a bucket (./s3.ts).

/** A bucket call failed. `down`: the store did not answer usefully (see above); otherwise it refused (e.g. 403). */
export class StoreError extends Error {
  readonly code = 'KILN_STORE_UNAVAILABLE';
  constructor(readonly operation: string, readonly down: boolean, cause: unknown) {
    super(`the image store ${down ? 'did not answer' : 'refused'} a ${operation}: ${describe(cause)}`, { cause });
    this.name = 'StoreError';
  }
}

export function isStoreError(e: unknown): e is StoreError {
  return e instanceof StoreError;
}

/** A short, secret-free description of an SDK or socket failure (no URL, no credentials). */
function describe(e: unknown): string {
  const err = e as { name?: unknown; code?: unknown; $metadata?: { httpStatusCode?: unknown } } | null;
  const status = err?.$metadata?.httpStatusCode;
  const name = typeof err?.code === 'string' ? err.code : typeof err?.name === 'string' ? err.name : 'error';
  return typeof status === 'number' ? `${name} (HTTP ${status})` : name;
}

/** Whether a failed bucket call means the store is down: no HTTP answer, a 5xx, or 429 throttling. */
export function isDownFailure(e: unknown): boolean {
  const status = (e as { $metadata?: { httpStatusCode?: unknown } } | null)?.$metadata?.httpStatusCode;
  return typeof status !== 'number' || status >= 500 || status === 429;
}

export interface StoreStatus {
  up: boolean;
  /** When the current outage began (null while up). */
  since: Date | null;
  /** What the last failure was (see StoreError), while down. */
  error: string | null;
}

type Listener = (status: StoreStatus) => void;

/** How long an observation stands before a check asks the bucket again. */
const FRESH_MS = 2000;
/** A check that gets no answer within this long counts as a failure. */
const CHECK_TIMEOUT_MS = 2000;

export class StoreHealth {
  private state: StoreStatus = { up: true, since: null, error: null };
  private heardAt = 0;
  private probing: Promise<void> | null = null;
  private readonly listeners = new Set<Listener>();

  /** `probe` asks the bucket (any answer below 500 resolves; ./s3.ts). */
  constructor(private readonly probe: () => Promise<void>) {}

  get status(): StoreStatus {
    return { ...this.state };
  }

  /** A bucket call got an answer. */
  ok(): void {
    this.heardAt = Date.now();
    if (this.state.up) return;
    this.state = { up: true, since: null, error: null };
    this.emit();
  }

  /** A bucket call failed in a way that means the store is down. */
  failed(error: string): void {
    this.heardAt = Date.now();
    if (!this.state.up) {
      this.state = { ...this.state, error };
      return;
    }
    this.state = { up: false, since: new Date(), error };
    this.emit();
  }

  /** Called on every change between up and down (the process logs it). */
  onChange(fn: Listener): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private emit(): void {
    for (const fn of this.listeners) fn(this.status);
  }

  /** The status, asking the bucket first when nothing was heard for `freshMs`; never waits longer than 2 s. */
  async check(freshMs = FRESH_MS): Promise<StoreStatus> {
    if (Date.now() - this.heardAt < freshMs) return this.status;
    this.probing ??= this.probe().catch(() => {}).finally(() => {
      this.probing = null;
    });
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      this.probing.then(() => false),
      new Promise<boolean>((r) => (timer = setTimeout(() => r(true), CHECK_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
    if (timedOut) this.failed(`no answer within ${CHECK_TIMEOUT_MS / 1000} s`);
    return this.status;
  }
}
