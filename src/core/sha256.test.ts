import { createHash, randomBytes as nodeRandomBytes } from 'node:crypto'
import { assert, suite } from '../../tests/harness.ts'
import { hashToken } from './secrets.ts'
import { createSha256, NATIVE_FROM, sha256Hex } from './sha256.ts'

const test = suite('core/sha256')

const reference = (data: string | Uint8Array) => createHash('sha256').update(data).digest('hex')

test('digests equal node:crypto for every length across the block and padding boundaries', () => {
  for (let length = 0; length <= 300; length++) {
    const data = nodeRandomBytes(length)
    assert.is(sha256Hex(data), reference(data), `${length} bytes`)
  }
  assert.is(sha256Hex(''), 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855')
  assert.is(sha256Hex('abc'), 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad')
})

test('strings are hashed as their UTF-8 bytes, short or long', () => {
  for (const text of ['svc_token-0123', 'héllo wörld 🎉'.repeat(9), 'ß'.repeat(3000), 'x'.repeat(5000)])
    assert.is(sha256Hex(text), reference(text), `${text.length} characters`)
  assert.is(hashToken('abc'), reference('abc'))
})

test('input fed in pieces digests as if fed at once, below and past the size handed to node:crypto', () => {
  for (const length of [1000, NATIVE_FROM - 1, NATIVE_FROM, NATIVE_FROM + 1, 3 * NATIVE_FROM + 17]) {
    const data = nodeRandomBytes(length)
    const hasher = createSha256()
    // The hasher copies what it keeps: the caller's buffer is reused between pieces, as a file reader does.
    const piece = new Uint8Array(777)
    for (let at = 0; at < length; at += piece.length) {
      const part = data.subarray(at, at + piece.length)
      piece.set(part)
      hasher.update(piece.subarray(0, part.length))
    }
    assert.is(hasher.hex(), reference(data), `${length} bytes`)
    assert.is(createSha256().update('a').update(data).digest().length, 32)
  }
})

test('a hasher cannot be fed or read after its digest', () => {
  const hasher = createSha256().update('x')
  hasher.hex()
  assert.throws(() => hasher.update('y'))
  assert.throws(() => hasher.digest())
})

test.run()
