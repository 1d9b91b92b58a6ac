/**
 * Password hashing with scrypt (memory-hard, in node:crypto on every runtime we support).
 *
 * Stored form: `scrypt$N$r$p$<salt b64url>$<hash b64url>`, so parameters can be raised later and
 * old hashes still verify. Verification compares in constant time.
 * @module
 */
import { Buffer } from 'node:buffer'
import { randomBytes, scrypt, timingSafeEqual } from 'node:crypto'
import type { ScryptParams } from '../deps.ts'

/**
 * Defaults: N=2^15, r=8, p=1 uses 32 MiB and takes tens of milliseconds per hash, the OWASP
 * minimum for scrypt; sign-in is meant to be slow.
 */
export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 15, r: 8, p: 1 }

const KEY_LENGTH = 32
const SALT_BYTES = 16

function derive(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  // maxmem must exceed 128 * N * r bytes or node refuses.
  const maxmem = 256 * params.N * params.r
  return new Promise((resolve, reject) => {
    scrypt(
      password.normalize('NFKC'),
      salt,
      KEY_LENGTH,
      { N: params.N, r: params.r, p: params.p, maxmem },
      (error, key) => (error ? reject(error) : resolve(key)),
    )
  })
}

/** Hashes a password for storage. */
export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  const salt = randomBytes(SALT_BYTES)
  const key = await derive(password, salt, params)
  return `scrypt$${params.N}$${params.r}$${params.p}$${salt.toString('base64url')}$${key.toString('base64url')}`
}

/** True when `password` matches a stored hash; false for malformed hashes. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = [Number(parts[1]), Number(parts[2]), Number(parts[3])]
  if (![N, r, p].every((n) => Number.isInteger(n) && n > 0)) return false
  const salt = Buffer.from(parts[4]!, 'base64url')
  const expected = Buffer.from(parts[5]!, 'base64url')
  const actual = await derive(password, salt, { N, r, p })
  return actual.length === expected.length && timingSafeEqual(actual, expected)
}

let dummy: { params: ScryptParams; hash: Promise<string> } | undefined

/**
 * Spends the same work as a real verification when no account matches, so response time does
 * not reveal which emails have accounts.
 */
export async function burnPasswordCheck(password: string, params: ScryptParams): Promise<void> {
  if (!dummy || dummy.params !== params) dummy = { params, hash: hashPassword('not-a-password', params) }
  await verifyPassword(password, await dummy.hash)
}
