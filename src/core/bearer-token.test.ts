import { assert, suite } from '../../tests/harness.ts'
import { bearerToken, MAX_AUTHORIZATION_LENGTH, parseBearer } from './bearer-token.ts'

const test = suite('core/bearer-token')

test('the bearer scheme is matched whatever its case', () => {
  for (const scheme of ['Bearer', 'bearer', 'BEARER', 'bEaReR']) assert.is(parseBearer(`${scheme} abc.123`), 'abc.123')
})

test('spaces and tabs around and after the scheme are allowed', () => {
  assert.is(parseBearer('Bearer    tok_1'), 'tok_1')
  assert.is(parseBearer('Bearer\ttok_1'), 'tok_1')
  assert.is(parseBearer('  Bearer tok_1  '), 'tok_1')
  assert.is(parseBearer('Bearer tok_1\t'), 'tok_1')
})

test('an empty token, a token with spaces inside and a missing header are no token', () => {
  for (const header of ['Bearer', 'Bearer ', 'Bearer    ', 'Bearer a b', '', null, undefined])
    assert.is(parseBearer(header), null, String(header))
})

test('other schemes are not bearer tokens', () => {
  for (const header of ['Basic dXNlcjpwYXNz', 'Token abc', 'Bearerabc', 'abc', 'Digest username="a"'])
    assert.is(parseBearer(header), null, header)
})

test('a header longer than the limit is refused even when it is well-formed', () => {
  const fits = `Bearer ${'a'.repeat(MAX_AUTHORIZATION_LENGTH - 7)}`
  assert.is(fits.length, MAX_AUTHORIZATION_LENGTH)
  assert.is(parseBearer(fits), 'a'.repeat(MAX_AUTHORIZATION_LENGTH - 7))
  assert.is(parseBearer(`${fits}a`), null)
  assert.is(parseBearer(`Bearer ${' '.repeat(100_000)}x`), null)
})

test('a request carries its token in the Authorization header', () => {
  const request = (authorization?: string) =>
    new Request('http://localhost/', authorization ? { headers: { authorization } } : {})
  assert.is(bearerToken(request('bearer  svc_abc')), 'svc_abc')
  assert.is(bearerToken(request('Basic x')), null)
  assert.is(bearerToken(request()), null)
})

test.run()
