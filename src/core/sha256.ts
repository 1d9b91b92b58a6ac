/**
 * SHA-256 without evaluating `node:crypto` unless the input is large.
 *
 * Why: evaluating `node:crypto` costs a compiled Bun server about 3 MB of resident memory and some
 * milliseconds of start (bench/results/history.md, "Workspace memory"), and the workspace server hashes at every
 * start (workspace ids from paths, the configured token, the snapshot of tracked files) and on
 * authenticated requests, nearly always a few hundred bytes. Web Crypto's digest is asynchronous,
 * which these synchronous paths cannot wait for. So input is collected, and hashed here in
 * JavaScript (FIPS 180-4) if it stays under {@link NATIVE_FROM} bytes, where that costs microseconds;
 * past it, `node:crypto` is loaded and takes over, so large content is hashed at native speed.
 * @module
 */

/** Input size from which `node:crypto` hashes instead (about 0.7 ms of JavaScript hashing, warm). */
export const NATIVE_FROM = 64 * 1024

const K = new Int32Array([
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5, 0xd807aa98,
  0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8,
  0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819,
  0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
  0xc67178f2,
])

// Scratch space of the compression function (hashing is synchronous, so one set serves every call).
const W = new Int32Array(64)
const H = new Int32Array(8)

/** The SHA-256 of `message` (already padded to whole 64-byte blocks) into `H`. */
function compressAll(message: Uint8Array, end: number): void {
  H[0] = 0x6a09e667
  H[1] = 0xbb67ae85
  H[2] = 0x3c6ef372
  H[3] = 0xa54ff53a
  H[4] = 0x510e527f
  H[5] = 0x9b05688c
  H[6] = 0x1f83d9ab
  H[7] = 0x5be0cd19
  for (let offset = 0; offset < end; offset += 64) {
    for (let i = 0; i < 16; i++) {
      const at = offset + i * 4
      W[i] = (message[at]! << 24) | (message[at + 1]! << 16) | (message[at + 2]! << 8) | message[at + 3]!
    }
    for (let i = 16; i < 64; i++) {
      const w15 = W[i - 15]!
      const w2 = W[i - 2]!
      const s0 = ((w15 >>> 7) | (w15 << 25)) ^ ((w15 >>> 18) | (w15 << 14)) ^ (w15 >>> 3)
      const s1 = ((w2 >>> 17) | (w2 << 15)) ^ ((w2 >>> 19) | (w2 << 13)) ^ (w2 >>> 10)
      W[i] = (W[i - 16]! + s0 + W[i - 7]! + s1) | 0
    }
    let a: number = H[0]!
    let b: number = H[1]!
    let c: number = H[2]!
    let d: number = H[3]!
    let e: number = H[4]!
    let f: number = H[5]!
    let g: number = H[6]!
    let h: number = H[7]!
    for (let i = 0; i < 64; i++) {
      const s1 = ((e >>> 6) | (e << 26)) ^ ((e >>> 11) | (e << 21)) ^ ((e >>> 25) | (e << 7))
      const t1 = (h + s1 + ((e & f) ^ (~e & g)) + K[i]! + W[i]!) | 0
      const s0 = ((a >>> 2) | (a << 30)) ^ ((a >>> 13) | (a << 19)) ^ ((a >>> 22) | (a << 10))
      const t2 = (s0 + ((a & b) ^ (a & c) ^ (b & c))) | 0
      h = g
      g = f
      f = e
      e = (d + t1) | 0
      d = c
      c = b
      b = a
      a = (t1 + t2) | 0
    }
    H[0] = (H[0]! + a) | 0
    H[1] = (H[1]! + b) | 0
    H[2] = (H[2]! + c) | 0
    H[3] = (H[3]! + d) | 0
    H[4] = (H[4]! + e) | 0
    H[5] = (H[5]! + f) | 0
    H[6] = (H[6]! + g) | 0
    H[7] = (H[7]! + h) | 0
  }
}

/** Hashes the first `length` bytes of `buffer`, which has room for the padding after them, into `H`. */
function hashInto(buffer: Uint8Array, length: number): void {
  // Padding: 0x80, zeros to 56 mod 64, then the length in bits as a 64-bit big-endian number
  // (under 2^32 here, as the input is under NATIVE_FROM bytes).
  const end = (length + 9 + 63) & ~63
  buffer[length] = 0x80
  buffer.fill(0, length + 1, end - 4)
  const bits = length * 8
  buffer[end - 4] = bits >>> 24
  buffer[end - 3] = bits >>> 16
  buffer[end - 2] = bits >>> 8
  buffer[end - 1] = bits
  compressAll(buffer, end)
}

/** `H` as 64 lowercase hex digits. */
function hexOfH(): string {
  let out = ''
  for (let i = 0; i < 8; i++) {
    const word = H[i]!
    out += HEX[(word >>> 24) & 0xff]! + HEX[(word >>> 16) & 0xff]! + HEX[(word >>> 8) & 0xff]! + HEX[word & 0xff]!
  }
  return out
}

/** The digest of the first `length` bytes of `buffer`, which has room for the padding after them. */
function digestOf(buffer: Uint8Array, length: number): Uint8Array {
  hashInto(buffer, length)
  const out = new Uint8Array(32)
  for (let i = 0; i < 8; i++) {
    const word = H[i]!
    out[i * 4] = word >>> 24
    out[i * 4 + 1] = word >>> 16
    out[i * 4 + 2] = word >>> 8
    out[i * 4 + 3] = word
  }
  return out
}

/** What `node:crypto`'s hash offers that we use. */
interface NativeHash {
  update(data: Uint8Array): NativeHash
  digest(): Uint8Array
}

let createNative: (() => NativeHash) | undefined
/** `node:crypto`'s SHA-256, evaluated on first use. */
function nativeHash(): NativeHash {
  if (!createNative) {
    const crypto = process.getBuiltinModule('node:crypto')
    createNative = () => crypto.createHash('sha256')
  }
  return createNative()
}

const encoder = new TextEncoder()
const HEX = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'))

/** An incremental SHA-256: `update` any number of times, then `digest` or `hex` once. */
export interface Sha256 {
  /** Adds bytes (copied: the caller may reuse its buffer), or a string as its UTF-8 bytes. */
  update(data: string | Uint8Array): Sha256
  /** The 32-byte digest; the hasher cannot be used afterwards. */
  digest(): Uint8Array
  /** The digest as 64 lowercase hex digits; the hasher cannot be used afterwards. */
  hex(): string
}

/** Starts a SHA-256. */
export function createSha256(): Sha256 {
  // Input collected so far, with room for the padding; null once node:crypto has taken over.
  let buffer: Uint8Array | null = new Uint8Array(128)
  let length = 0
  let native: NativeHash | undefined
  let done = false
  const hasher: Sha256 = {
    update(data) {
      if (done) throw new Error('sha256: update after digest')
      const bytes = typeof data === 'string' ? encoder.encode(data) : data
      if (native) {
        native.update(bytes)
        return hasher
      }
      if (length + bytes.length >= NATIVE_FROM) {
        native = nativeHash().update(buffer!.subarray(0, length)).update(bytes)
        buffer = null
        return hasher
      }
      if (length + bytes.length + 72 > buffer!.length) {
        const grown = new Uint8Array(Math.max(buffer!.length * 2, length + bytes.length + 72))
        grown.set(buffer!.subarray(0, length))
        buffer = grown
      }
      buffer!.set(bytes, length)
      length += bytes.length
      return hasher
    },
    digest() {
      if (done) throw new Error('sha256: digest twice')
      done = true
      return native ? new Uint8Array(native.digest()) : digestOf(buffer!, length)
    },
    hex() {
      let out = ''
      for (const byte of hasher.digest()) out += HEX[byte]
      return out
    },
  }
  return hasher
}

// Where short strings are encoded for a one-shot hash (tokens, paths): no allocation per call.
const SCRATCH = new Uint8Array(4096 + 72)

/** Lowercase hex SHA-256 of bytes or of a string's UTF-8 bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  // A string of n UTF-16 units has at most 3n bytes of UTF-8.
  if (typeof data === 'string' && data.length * 3 <= SCRATCH.length - 72) {
    hashInto(SCRATCH, encoder.encodeInto(data, SCRATCH).written)
    return hexOfH()
  }
  return createSha256().update(data).hex()
}
