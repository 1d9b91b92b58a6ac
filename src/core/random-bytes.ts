/**
 * Random bytes from Web Crypto's `getRandomValues`, a cryptographically secure generator.
 *
 * Why not `node:crypto`'s `randomBytes`: evaluating `node:crypto` costs a compiled Bun server about
 * 3 MB of resident memory at start (bench/results/history.md, "Workspace memory"), and ids, tokens and temp names
 * need nothing else from it.
 * @module
 */

/** `size` random bytes (at most 65,536, Web Crypto's limit per call), as a Buffer for its encodings. */
export function randomBytes(size: number): Buffer {
  // Not allocUnsafe: a small one is a slice of a pool shared with unrelated buffers.
  const bytes = Buffer.alloc(size)
  globalThis.crypto.getRandomValues(bytes)
  return bytes
}
