// Reads a byte stream into memory with a hard cap, cancelling it the moment the cap is passed
// (request bodies, upstream provider responses).

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
