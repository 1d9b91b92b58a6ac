/**
 * Prefixed identifiers that sort by creation time: `<prefix>_<10 chars time><16 chars random>`
 * in Crockford base32 (a ULID body). Sorting ids sorts by creation, which key-set pagination
 * relies on; ids made in the same millisecond stay ordered by bumping the random part.
 * @module
 */
import { randomBytes } from './random-bytes.ts'

const ALPHABET = '0123456789ABCDEFGHJKMNPQRSTVWXYZ'

let lastTime = -1
let lastRandom: number[] = []

function encodeTime(time: number): string {
  let out = ''
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[time % 32] + out
    time = Math.floor(time / 32)
  }
  return out
}

function nextRandom(time: number): number[] {
  if (time === lastTime) {
    // Increment the previous random part so ids within one millisecond still sort in creation order.
    const digits = [...lastRandom]
    for (let i = digits.length - 1; i >= 0; i--) {
      if (digits[i]! < 31) {
        digits[i]!++
        break
      }
      digits[i] = 0
    }
    lastRandom = digits
    return digits
  }
  const bytes = randomBytes(16)
  lastTime = time
  lastRandom = Array.from(bytes, (b) => b % 32)
  return lastRandom
}

/** A new time-sortable id with the given prefix, e.g. `newId('org')` → `org_01J…`. */
export function newId(prefix: string, now: number = Date.now()): string {
  const random = nextRandom(now)
    .map((d) => ALPHABET[d])
    .join('')
  return `${prefix}_${encodeTime(now)}${random}`.toLowerCase()
}

/** True when `id` has the shape `newId(prefix)` produces. */
export function isId(id: string, prefix: string): boolean {
  return new RegExp(`^${prefix}_[0-9a-hjkmnp-tv-z]{26}$`).test(id)
}
