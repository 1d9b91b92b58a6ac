import { createServer } from 'node:http'
import { Buffer } from 'node:buffer'
import type { AddressInfo } from 'node:net'
import { assert, suite } from '../../../tests/harness.ts'
import { FORCED_REFRESH_MS, IdTokenError, JwksCache, verifyIdToken } from './id-token.ts'
import { safeReturnPath } from './sso-flow.ts'

const test = suite('control-plane/sso id tokens')

const b64 = (value: string | Uint8Array) => Buffer.from(value).toString('base64url')

interface Key {
  kid: string
  alg: string
  sign(data: Uint8Array<ArrayBuffer>): Promise<Uint8Array>
  jwk: JsonWebKey
}

async function key(alg: 'RS256' | 'ES256' | 'PS256', kid: string): Promise<Key> {
  const params =
    alg === 'ES256'
      ? { name: 'ECDSA', namedCurve: 'P-256' }
      : {
          name: alg === 'PS256' ? 'RSA-PSS' : 'RSASSA-PKCS1-v1_5',
          modulusLength: 2048,
          publicExponent: new Uint8Array([1, 0, 1]),
          hash: 'SHA-256',
        }
  const pair = (await crypto.subtle.generateKey(params, true, ['sign', 'verify'])) as CryptoKeyPair
  const signWith =
    alg === 'ES256'
      ? { name: 'ECDSA', hash: 'SHA-256' }
      : alg === 'PS256'
        ? { name: 'RSA-PSS', saltLength: 32 }
        : 'RSASSA-PKCS1-v1_5'
  return {
    kid,
    alg,
    jwk: { ...(await crypto.subtle.exportKey('jwk', pair.publicKey)), kid, alg } as JsonWebKey,
    sign: async (data) => new Uint8Array(await crypto.subtle.sign(signWith, pair.privateKey, data)),
  }
}

async function token(k: Key, claims: Record<string, unknown>, header: Record<string, unknown> = {}): Promise<string> {
  const head = b64(JSON.stringify({ alg: k.alg, kid: k.kid, ...header }))
  const body = b64(JSON.stringify(claims))
  return `${head}.${body}.${b64(await k.sign(new TextEncoder().encode(`${head}.${body}`)))}`
}

/** A JWKS endpoint serving `keys()`, counting fetches. */
async function jwksServer(keys: () => JsonWebKey[]) {
  let fetches = 0
  const server = createServer((_req, res) => {
    fetches++
    res.writeHead(200, { 'content-type': 'application/json' })
    res.end(JSON.stringify({ keys: keys() }))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`,
    fetches: () => fetches,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  }
}

const ISSUER = 'https://idp.test'
const now = Date.now()
const claims = (extra: Record<string, unknown> = {}) => ({
  iss: ISSUER,
  aud: 'client',
  sub: 'subject-1',
  nonce: 'n-1',
  iat: Math.floor(now / 1000),
  exp: Math.floor(now / 1000) + 300,
  email: 'Ada@Corp.test',
  email_verified: true,
  ...extra,
})

async function refusal(work: Promise<unknown>): Promise<string> {
  try {
    await work
  } catch (error) {
    if (error instanceof IdTokenError) return error.reason
    throw error
  }
  return 'accepted'
}

test('RS256, ES256 and PS256 tokens verify; every claim check refuses what it should', async () => {
  const rs = await key('RS256', 'rs')
  const es = await key('ES256', 'es')
  const ps = await key('PS256', 'ps')
  const jwks = await jwksServer(() => [rs.jwk, es.jwk, ps.jwk])
  try {
    const cache = new JwksCache(() => now)
    const expect = { issuer: ISSUER, clientId: 'client', nonce: 'n-1', jwksUri: jwks.url, nowMs: now }
    for (const k of [rs, es, ps]) {
      const verified = await verifyIdToken(await token(k, claims()), expect, cache)
      assert.is(verified.sub, 'subject-1')
      assert.is(verified.email, 'ada@corp.test')
    }
    const cases: Array<[string, () => Promise<unknown>]> = [
      [
        'the token expired',
        async () => verifyIdToken(await token(rs, claims({ exp: Math.floor(now / 1000) - 120 })), expect, cache),
      ],
      [
        'the token is for another audience',
        async () => verifyIdToken(await token(rs, claims({ aud: 'other' })), expect, cache),
      ],
      [
        'the token is for another party',
        async () => verifyIdToken(await token(rs, claims({ aud: ['client', 'x'] })), expect, cache),
      ],
      [
        'the token is from another issuer',
        async () => verifyIdToken(await token(rs, claims({ iss: 'https://evil.test' })), expect, cache),
      ],
      [
        'the nonce does not match',
        async () => verifyIdToken(await token(rs, claims({ nonce: 'other' })), expect, cache),
      ],
      [
        'the token has no usable subject',
        async () => verifyIdToken(await token(rs, claims({ sub: '' })), expect, cache),
      ],
      [
        'the token was issued in the future',
        async () => verifyIdToken(await token(rs, claims({ iat: Math.floor(now / 1000) + 3600 })), expect, cache),
      ],
    ]
    for (const [reason, work] of cases) assert.is(await refusal(work()), reason)
    // A payload changed after signing, an unsigned token and a MAC (HS256) are all refused.
    const good = await token(rs, claims())
    const [h, , s] = good.split('.')
    const forged = `${h}.${b64(JSON.stringify(claims({ sub: 'admin' })))}.${s}`
    assert.is(await refusal(verifyIdToken(forged, expect, cache)), 'the signature does not verify')
    const none = `${b64(JSON.stringify({ alg: 'none' }))}.${b64(JSON.stringify(claims()))}.`
    assert.is(await refusal(verifyIdToken(none, expect, cache)), 'unsupported signing algorithm none')
    const hs = `${b64(JSON.stringify({ alg: 'HS256', kid: 'rs' }))}.${b64(JSON.stringify(claims()))}.${b64('mac')}`
    assert.is(await refusal(verifyIdToken(hs, expect, cache)), 'unsupported signing algorithm HS256')
    // A key of one algorithm is not used for another (an RSA key id named with PS256).
    const confused = await token(rs, claims(), { alg: 'PS256' })
    assert.is(await refusal(verifyIdToken(confused, expect, cache)), 'the key is for another algorithm')
    assert.is(jwks.fetches(), 1, 'one fetch served every token')
  } finally {
    await jwks.close()
  }
})

test('an unknown key id refetches the set once, and not again within the cool-down', async () => {
  let current = await key('RS256', 'old')
  const jwks = await jwksServer(() => [current.jwk])
  try {
    let time = now
    const cache = new JwksCache(() => time)
    const expect = () => ({ issuer: ISSUER, clientId: 'client', nonce: 'n-1', jwksUri: jwks.url, nowMs: time })
    await verifyIdToken(await token(current, claims()), expect(), cache)
    const stranger = await key('RS256', 'stranger')
    const unknown = await token(stranger, claims())
    assert.is(await refusal(verifyIdToken(unknown, expect(), cache)), 'no key in the provider JWKS matches the token')
    assert.is(jwks.fetches(), 2)
    assert.is(await refusal(verifyIdToken(unknown, expect(), cache)), 'no key in the provider JWKS matches the token')
    assert.is(jwks.fetches(), 2, 'no second refetch inside the cool-down')
    time += FORCED_REFRESH_MS
    current = await key('ES256', 'new')
    await verifyIdToken(await token(current, claims()), expect(), cache)
    assert.is(jwks.fetches(), 3, 'the rotated key was fetched')
  } finally {
    await jwks.close()
  }
})

test('return paths stay inside the console on this origin', () => {
  assert.is(safeReturnPath('/console/#device=ABCD-EFGH'), '/console/#device=ABCD-EFGH')
  assert.is(safeReturnPath('/console'), '/console')
  for (const hostile of [
    'https://evil.test/console/',
    '//evil.test/console/',
    '/\\evil.test',
    '/v1/me',
    '/console/../v1/me',
    'javascript:alert(1)',
    '/console/\n',
    undefined,
  ])
    assert.is(safeReturnPath(hostile), '/console/', String(hostile))
})

test.run()
