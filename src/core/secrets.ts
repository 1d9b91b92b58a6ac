/**
 * Secret handling shared by both surfaces: generation, hashing for storage, and constant-time
 * comparison (the reference compares tokens with `===`, which leaks timing).
 * @module
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** A random URL-safe token with a recognisable prefix, e.g. `svc_…` (32 random bytes = 256 bits). */
export function generateToken(prefix: string, bytes = 32): string {
  return `${prefix}${randomBytes(bytes).toString('base64url')}`
}

/**
 * SHA-256 hex of a high-entropy token, for storage and lookup. Tokens we issue carry 256 random
 * bits, so a salt adds nothing against guessing; passwords use a memory-hard KDF instead.
 */
export function hashToken(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex')
}

/**
 * Compares two secrets in time independent of where they differ. Both sides are hashed first so
 * unequal lengths take the same path and length is not revealed either.
 */
export function secretsEqual(a: string | null | undefined, b: string | null | undefined): boolean {
  if (typeof a !== 'string' || typeof b !== 'string' || a.length === 0 || b.length === 0) return false
  const da = createHash('sha256').update(a, 'utf8').digest()
  const db = createHash('sha256').update(b, 'utf8').digest()
  return timingSafeEqual(da, db)
}
