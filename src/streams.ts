// Reads a byte stream into memory with a hard cap, cancelling it the moment the cap is passed
// (request bodies, upstream provider responses).

/**
 * Like readCapped for a Node stream (a request body on the Node server); stops reading, and
 * destroys the stream, the moment the cap is passed.
 */
export async function readNodeCapped(stream: AsyncIterable<Buffer>, cap: number): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.byteLength;
    if (total > cap) return null;
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}

/** The whole stream, or null as soon as it exceeds `cap` bytes (the stream is then cancelled). */
export async function readCapped(stream: ReadableStream<Uint8Array>, cap: number): Promise<Buffer | null> {
  const reader = stream.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    total += value.byteLength;
    if (total > cap) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
