// Writing results: a temporary file in the target directory renamed over the target once it is
// complete (all at once, or streamed piece by piece), so a command that fails or is interrupted leaves no partial file behind.

import { randomBytes } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { KilnError } from '../../client/errors.ts';
import { retryingFetch } from '../../client/retry.ts';

/** Writes `data` to `file` all at once or not at all; returns the absolute path. */
export async function writeAtomically(file: string, data: string | Uint8Array): Promise<string> {
  const target = path.resolve(file);
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(4).toString('hex')}.part`);
  try {
    await fs.writeFile(temp, data, { flag: 'wx' });
    await fs.rename(temp, target);
  } catch (e) {
    await fs.rm(temp, { force: true }).catch(() => {});
    throw e;
  }
  return target;
}

/**
 * Writes text as it comes (a stream of JSON Lines, say) to a temporary file beside `file`, renamed
 * over it once the last piece is written; on any error nothing is left behind. Returns the path.
 */
export async function writeLinesAtomically(file: string, pieces: AsyncIterable<string>): Promise<string> {
  const target = path.resolve(file);
  const temp = path.join(path.dirname(target), `.${path.basename(target)}.${randomBytes(4).toString('hex')}.part`);
  let handle: fs.FileHandle | null = null;
  try {
    handle = await fs.open(temp, 'wx');
    let pending = '';
    for await (const piece of pieces) {
      pending += piece;
      if (pending.length >= 64 * 1024) {
        await handle.writeFile(pending);
        pending = '';
      }
    }
    if (pending) await handle.writeFile(pending);
    await handle.close();
    handle = null;
    await fs.rename(temp, target);
  } catch (e) {
    await handle?.close().catch(() => {});
    await fs.rm(temp, { force: true }).catch(() => {});
    throw e;
  }
  return target;
}

/**
 * Where a result goes: `--out` as given (a directory: the default name inside it), else the
 * default name in the current directory.
 */
export async function targetPath(out: string | undefined, defaultName: string): Promise<string> {
  if (out === undefined) return path.resolve(defaultName);
  const stat = await fs.stat(out).catch(() => null);
  return stat?.isDirectory() ? path.resolve(out, defaultName) : path.resolve(out);
}

/**
 * The bytes behind a result URL (a signed or public URL of the service's store), through the
 * client's retrying fetch: a 503 or no answer retried (abortably, nothing after the last
 * attempt), and an error answer typed by its envelope as every other call's is.
 */
export async function download(url: string, signal?: AbortSignal): Promise<Uint8Array> {
  const res = await fetchResult(new Request(url, { signal }));
  if (!res.ok) throw KilnError.from(res, await res.json().catch(() => null));
  return new Uint8Array(await res.arrayBuffer());
}

const fetchResult = retryingFetch((request) => fetch(request), { maxAttempts: 3 });

const IMAGE_EXT: Record<string, string> = { 'image/png': 'png', 'image/jpeg': 'jpg', 'image/webp': 'webp', 'image/avif': 'avif', 'image/gif': 'gif', 'image/svg+xml': 'svg' };
const CODE_EXT: Record<string, string> = {
  text: 'txt', tsx: 'tsx', jsx: 'jsx', css: 'css', svg: 'svg', json: 'json', typescript: 'ts',
  javascript: 'js', mdx: 'mdx', markdown: 'md', glsl: 'glsl',
};

export function imageExtension(mediaType: string | null | undefined, format?: string | null): string {
  if (format) return format === 'jpeg' ? 'jpg' : format;
  return IMAGE_EXT[mediaType ?? ''] ?? 'png';
}

/** The extension for generated code: the requested language, HTML for a screen, SVG when the text is one. */
export function codeExtension(code: string, opts: { lang?: string; screen?: boolean }): string {
  if (opts.screen) return 'html';
  if (opts.lang) return CODE_EXT[opts.lang] ?? 'txt';
  return /^\s*(<\?xml[^>]*>\s*)?<svg[\s>]/i.test(code) ? 'svg' : 'txt';
}
