/**
 * A small OpenID provider on loopback for the SSO route suites: discovery, an authorization
 * endpoint that signs in whoever the test names (no form), a token endpoint that checks the client
 * secret, the redirect URI and the PKCE verifier and honours each code once, and a JWKS that the
 * test can rotate. Tests also bend the ID token (expired, another audience) to see it refused;
 * the success path and key rotation are also run against the real `oidc-provider` in the browser
 * suite.
 * @module
 */
import { Buffer } from 'node:buffer'
import { createHash, randomBytes } from 'node:crypto'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'

/** Who the next authorization signs in. */
export interface FakeUser {
  sub: string
  email?: string
  email_verified?: boolean
  name?: string
}

interface SigningKey {
  kid: string
  alg: 'RS256' | 'ES256'
  privateKey: CryptoKey
  publicJwk: JsonWebKey
}

interface IssuedCode {
  clientId: string
  redirectUri: string
  challenge: string
  nonce: string
  user: FakeUser
  used: boolean
}

const b64 = (bytes: Uint8Array | string) => Buffer.from(bytes).toString('base64url')

async function newKey(alg: 'RS256' | 'ES256'): Promise<SigningKey> {
  const params =
    alg === 'RS256'
      ? { name: 'RSASSA-PKCS1-v1_5', modulusLength: 2048, publicExponent: new Uint8Array([1, 0, 1]), hash: 'SHA-256' }
      : { name: 'ECDSA', namedCurve: 'P-256' }
  const pair = (await crypto.subtle.generateKey(params, true, ['sign', 'verify'])) as CryptoKeyPair
  const kid = `k-${randomBytes(6).toString('hex')}`
  const publicJwk = await crypto.subtle.exportKey('jwk', pair.publicKey)
  return { kid, alg, privateKey: pair.privateKey, publicJwk: { ...publicJwk, kid, alg, use: 'sig' } as JsonWebKey }
}

/** A running fake provider. */
export class FakeOidcProvider {
  issuer = ''
  readonly clientId = 'service-test-client'
  readonly clientSecret = `secret-${randomBytes(8).toString('hex')}`
  /** Who the next authorization request signs in. */
  nextUser: FakeUser = { sub: 'sub-ada', email: 'ada@corp.test', email_verified: true, name: 'Ada' }
  /** Claims laid over the next ID tokens (e.g. `{ aud: 'other' }` or `{ exp: 0 }`). */
  tamper: Record<string, unknown> = {}
  /** How many times the JWKS was fetched. */
  jwksFetches = 0
  /** Token requests answered. */
  tokenRequests = 0
  #keys: SigningKey[] = []
  #codes = new Map<string, IssuedCode>()
  #server: Server | null = null

  /** Starts on a loopback port with one signing key of `alg`. */
  static async start(alg: 'RS256' | 'ES256' = 'RS256'): Promise<FakeOidcProvider> {
    const provider = new FakeOidcProvider()
    provider.#keys = [await newKey(alg)]
    const server = createServer((req, res) => {
      provider.#handle(req.method ?? 'GET', req.url ?? '/', req.headers, req).then(
        ({ status, body, headers }) => {
          res.writeHead(status, { 'content-type': 'application/json', ...headers })
          res.end(body)
        },
        () => {
          res.writeHead(500)
          res.end()
        },
      )
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    provider.#server = server
    provider.issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
    return provider
  }

  /** Replaces the signing key by a new one with a new key id (the old one leaves the JWKS). */
  async rotate(alg: 'RS256' | 'ES256' = this.#keys[0]!.alg): Promise<void> {
    this.#keys = [await newKey(alg)]
  }

  async close(): Promise<void> {
    await new Promise<void>((resolve) => this.#server?.close(() => resolve()) ?? resolve())
  }

  async #handle(
    method: string,
    rawUrl: string,
    headers: Record<string, string | string[] | undefined>,
    req: AsyncIterable<Uint8Array>,
  ): Promise<{ status: number; body: string; headers?: Record<string, string> }> {
    const url = new URL(rawUrl, this.issuer)
    const json = (status: number, value: unknown) => ({ status, body: JSON.stringify(value) })
    if (url.pathname === '/.well-known/openid-configuration')
      return json(200, {
        issuer: this.issuer,
        authorization_endpoint: `${this.issuer}/authorize`,
        token_endpoint: `${this.issuer}/token`,
        jwks_uri: `${this.issuer}/jwks`,
        response_types_supported: ['code'],
        subject_types_supported: ['public'],
        id_token_signing_alg_values_supported: ['RS256', 'ES256'],
        code_challenge_methods_supported: ['S256'],
        token_endpoint_auth_methods_supported: ['client_secret_basic'],
      })
    if (url.pathname === '/jwks') {
      this.jwksFetches++
      return json(200, { keys: this.#keys.map((k) => k.publicJwk) })
    }
    if (url.pathname === '/authorize' && method === 'GET') {
      const q = url.searchParams
      if (q.get('client_id') !== this.clientId || q.get('code_challenge_method') !== 'S256')
        return json(400, { error: 'invalid_request' })
      const code = randomBytes(16).toString('base64url')
      this.#codes.set(code, {
        clientId: q.get('client_id')!,
        redirectUri: q.get('redirect_uri')!,
        challenge: q.get('code_challenge')!,
        nonce: q.get('nonce')!,
        user: this.nextUser,
        used: false,
      })
      const back = new URL(q.get('redirect_uri')!)
      back.searchParams.set('code', code)
      back.searchParams.set('state', q.get('state')!)
      back.searchParams.set('iss', this.issuer)
      return { status: 302, body: '', headers: { location: back.toString() } }
    }
    if (url.pathname === '/token' && method === 'POST') {
      this.tokenRequests++
      const chunks: Uint8Array[] = []
      for await (const chunk of req) chunks.push(chunk)
      const form = new URLSearchParams(Buffer.concat(chunks).toString())
      const basic = String(headers.authorization ?? '')
      const expected = `Basic ${Buffer.from(`${this.clientId}:${this.clientSecret}`).toString('base64')}`
      if (basic !== expected) return json(401, { error: 'invalid_client' })
      const issued = this.#codes.get(form.get('code') ?? '')
      if (!issued || issued.used) return json(400, { error: 'invalid_grant' })
      issued.used = true
      const challenge = b64(
        createHash('sha256')
          .update(form.get('code_verifier') ?? '')
          .digest(),
      )
      if (challenge !== issued.challenge || form.get('redirect_uri') !== issued.redirectUri)
        return json(400, { error: 'invalid_grant' })
      const now = Math.floor(Date.now() / 1000)
      const idToken = await this.sign({
        iss: this.issuer,
        aud: this.clientId,
        iat: now,
        exp: now + 300,
        nonce: issued.nonce,
        ...issued.user,
        ...this.tamper,
      })
      return json(200, { access_token: 'at', token_type: 'Bearer', expires_in: 300, id_token: idToken })
    }
    return json(404, { error: 'not_found' })
  }

  /** Signs claims with the current key. */
  async sign(claims: Record<string, unknown>): Promise<string> {
    const key = this.#keys[0]!
    const head = b64(JSON.stringify({ alg: key.alg, kid: key.kid, typ: 'JWT' }))
    const body = b64(JSON.stringify(claims))
    const algorithm = key.alg === 'RS256' ? 'RSASSA-PKCS1-v1_5' : { name: 'ECDSA', hash: 'SHA-256' }
    const signature = await crypto.subtle.sign(algorithm, key.privateKey, new TextEncoder().encode(`${head}.${body}`))
    return `${head}.${body}.${b64(new Uint8Array(signature))}`
  }
}
