import { assert, suite } from '../../tests/harness.ts'
import { isId, newId } from './ids.ts'
import { randomBytes } from './random-bytes.ts'
import { bytesEqual, generateToken, hashToken, secretsEqual } from './secrets.ts'

const ids = suite('core/ids-and-secrets')

ids('ids are prefixed, well-formed and sort in creation order, even within one millisecond', () => {
  const made = Array.from({ length: 500 }, () => newId('org', 1_700_000_000_000))
  const later = newId('org', 1_700_000_000_001)
  assert.ok(made.every((id) => isId(id, 'org')))
  assert.equal([...made].sort(), made)
  assert.ok(later > made[made.length - 1]!)
  assert.is(new Set(made).size, made.length)
  assert.not.ok(isId('usr_' + made[0]!.slice(4), 'org'))
})

ids('ids made at a later time sort after earlier ones', () => {
  const a = newId('key', Date.UTC(2026, 0, 1))
  const b = newId('key', Date.UTC(2026, 0, 2))
  assert.ok(a < b)
})

ids('secretsEqual is true only for identical non-empty secrets', () => {
  assert.ok(secretsEqual('abc123', 'abc123'))
  assert.not.ok(secretsEqual('abc123', 'abc124'))
  assert.not.ok(secretsEqual('abc', 'abc123'))
  assert.not.ok(secretsEqual('', ''))
  assert.not.ok(secretsEqual(null, 'x'))
})

ids('generated tokens carry their prefix and enough entropy, and hash stably', () => {
  const t = generateToken('svc_', 32)
  assert.match(t, /^svc_[A-Za-z0-9_-]{43}$/)
  assert.is.not(generateToken('svc_'), t)
  assert.is(hashToken('x'), hashToken('x'))
  assert.match(hashToken(t), /^[0-9a-f]{64}$/)
})

ids('bytesEqual compares equal-length bytes whole, and unequal lengths are unequal', () => {
  const a = Uint8Array.from([1, 2, 3, 4])
  assert.ok(bytesEqual(a, Uint8Array.from([1, 2, 3, 4])))
  assert.not.ok(bytesEqual(a, Uint8Array.from([1, 2, 3, 5])))
  assert.not.ok(bytesEqual(a, Uint8Array.from([0, 2, 3, 4])))
  assert.not.ok(bytesEqual(a, Uint8Array.from([1, 2, 3])))
  assert.ok(bytesEqual(new Uint8Array(0), new Uint8Array(0)))
})

ids('random bytes have the requested length and differ between calls', () => {
  assert.is(randomBytes(16).length, 16)
  assert.is(randomBytes(6).toString('hex').length, 12)
  assert.is.not(randomBytes(32).toString('hex'), randomBytes(32).toString('hex'))
})

ids.run()
