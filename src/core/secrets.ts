/**
 * Secret handling shared by both surfaces: generation, hashing for storage, and constant-time
 * comparison (the reference compares tokens with `===`, which leaks timing).
 *
 * None of it evaluates `node:crypto` (see `random-bytes.ts` and `sha256.ts`): the workspace server
 * does all three at start and on authenticated requests.
 * @module
 */
import { randomBytes } from './random-bytes.ts'
import { createSha256, sha256Hex } from './sha256.ts'

/** A random URL-safe token with a recognisable prefix, e.g. `svc_…` (32 random bytes = 256 bits). */
export function generateToken(prefix: string, bytes = 32): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`
}

/**
 * SHA-256 hex of a high-entropy token, for storage and lookup. Tokens we issue carry 256 random
 * bits, so a salt adds nothing against guessing; passwords use a memory-hard KDF instead.
 */
export function hashToken(token: string): string {
  return sha256Hex(token)
}

/**
 * True when two byte strings of the same length are equal, in time that does not depend on where
 * they differ: every byte is compared, and no branch or early exit depends on their values (the
 * JavaScript form of `timingSafeEqual`). Lengths are not secret here: callers compare digests.
 */
export function bytesEqual(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let difference = 0
  for (let i = 0; i < a.length; i++) difference |= a[i]! ^ b[i]!
  return difference === 0
}

/**
 * Compares two secrets in time independent of where they differ. Both sides are hashed first so
 * unequal lengths take the same path and length is not revealed either.
 */
export function secretsEqual(a: string | null | undefined, b: string | null | undefined): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length === 0 || b.length === 0) return false
  return bytesEqual(createSha256().update(a).digest(), createSha256().update(b).digest())
}
