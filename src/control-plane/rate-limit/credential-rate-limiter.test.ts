/**
 * The token buckets on a clock the test moves: refill at the configured rate up to the burst, the
 * share of each instance, and the memory bound (refilled buckets swept, the oldest dropped over the cap).
 */
import { assert, suite } from '../../../tests/harness.ts'
import { CredentialRateLimiter } from './credential-rate-limiter.ts'

const test = suite('control-plane/credential-rate-limiter')

function limiter(options: { ratePerSecond: number; burst: number; maxTracked?: number }) {
  let now = 0
  const l = new CredentialRateLimiter({ maxTracked: 1000, ...options, clock: () => now })
  return { l, advance: (ms: number) => (now += ms) }
}

test('a bucket serves its burst, refuses with the wait for one token, and refills at the rate up to the burst', () => {
  const { l, advance } = limiter({ ratePerSecond: 2, burst: 3 })
  assert.equal(
    [1, 2, 3].map(() => l.take('a').allowed),
    [true, true, true],
  )
  const refused = l.take('a')
  assert.is(refused.allowed, false)
  assert.is(refused.retryAfterSeconds, 1, 'half a second to one token, rounded up')
  assert.is(refused.resetSeconds, 2, '1.5 s to refill three tokens, rounded up')
  advance(500)
  assert.is(l.take('a').allowed, true)
  assert.is(l.take('a').allowed, false)
  advance(60_000)
  const full = l.take('a')
  assert.is(full.remaining, 2, 'never more than the burst')
})

test('with n instances each bucket holds 1/n of the burst and refills at 1/n of the rate; remaining reports the whole budget', () => {
  const { l, advance } = limiter({ ratePerSecond: 10, burst: 10 })
  l.setInstances(2)
  const served = Array.from({ length: 8 }, () => l.take('a').allowed).filter(Boolean).length
  assert.is(served, 5)
  advance(200)
  const next = l.take('a')
  assert.is(next.allowed, true, '0.2 s at 5/s is one token')
  assert.is(next.remaining, 0)
  l.setInstances(20)
  assert.is(l.take('b').allowed, true, 'a share below one request is one request')
  assert.is(l.take('b').allowed, false)
})

test('memory is bounded: refilled buckets are swept, and over the cap the oldest are dropped', () => {
  const { l, advance } = limiter({ ratePerSecond: 1, burst: 5, maxTracked: 100 })
  for (let i = 0; i < 50; i++) l.take(`k${i}`)
  assert.is(l.size, 50)
  advance(500)
  assert.is(l.sweep(), 0, 'not refilled yet')
  advance(600)
  assert.is(l.sweep(), 50, 'a refilled bucket equals no bucket')
  assert.is(l.size, 0)
  for (let i = 0; i < 1000; i++) l.take(`busy${i}`)
  assert.ok(l.size <= 100, `${l.size} buckets`)
})

test.run()
