// Reads a byte stream into memory with a hard cap, cancelling it the moment the cap is passed
// (request bodies, upstream provider responses).

/**
 * The whole stream, or null as soon as it exceeds `cap` bytes; reading stops there and the
 * stream is cancelled (web streams) or destroyed (Node streams, e.g. a request body read
 * straight from the Node server).
 */
export async function readCapped(stream: AsyncIterable<Uint8Array>, cap: number): Promise<Buffer | null> {
  const chunks: Uint8Array[] = [];
  let total = 0;
  for await (const chunk of stream) {
    total += chunk.byteLength;
    if (total > cap) return null; // leaving the loop cancels / destroys the stream
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, total);
}
