/**
 * ID token verification with WebCrypto: the JWS signature against the provider's JWKS (RS256,
 * RS384, RS512, PS256, ES256, ES384), then `iss`, `aud` (and `azp` when several audiences), `exp`,
 * `iat` and `nonce` (OpenID Connect Core §3.1.3.7). Key sets are cached per JWKS URL; a token
 * signed with a key id the cache does not hold refetches the set once (the provider rotated its
 * keys), at most once per {@link FORCED_REFRESH_MS} per URL so unknown key ids cannot make this
 * server hammer the provider.
 * @module
 */
import { Buffer } from 'node:buffer'
import { providerJson, ProviderError } from './oidc-client.ts'

/** How long a fetched key set is used without asking again. */
export const JWKS_TTL_MS = 3600_000
/** Least time between two refetches caused by an unknown key id. */
export const FORCED_REFRESH_MS = 10_000
/** Clock skew tolerated on `exp` and `iat`. */
export const CLOCK_SKEW_S = 60

type Jwk = JsonWebKey & { kid?: string; alg?: string; use?: string }

interface Algorithm {
  kty: 'RSA' | 'EC'
  import: RsaHashedImportParams | EcKeyImportParams
  verify: AlgorithmIdentifier | RsaPssParams | EcdsaParams
}

const ALGORITHMS: Record<string, Algorithm> = {
  RS256: { kty: 'RSA', import: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-256' }, verify: 'RSASSA-PKCS1-v1_5' },
  RS384: { kty: 'RSA', import: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-384' }, verify: 'RSASSA-PKCS1-v1_5' },
  RS512: { kty: 'RSA', import: { name: 'RSASSA-PKCS1-v1_5', hash: 'SHA-512' }, verify: 'RSASSA-PKCS1-v1_5' },
  PS256: { kty: 'RSA', import: { name: 'RSA-PSS', hash: 'SHA-256' }, verify: { name: 'RSA-PSS', saltLength: 32 } },
  ES256: { kty: 'EC', import: { name: 'ECDSA', namedCurve: 'P-256' }, verify: { name: 'ECDSA', hash: 'SHA-256' } },
  ES384: { kty: 'EC', import: { name: 'ECDSA', namedCurve: 'P-384' }, verify: { name: 'ECDSA', hash: 'SHA-384' } },
}

/** Why a token was refused; `reason` is stable and safe to show. */
export class IdTokenError extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

/** The claims this server uses from a verified ID token. */
export interface IdTokenClaims {
  iss: string
  sub: string
  email: string | null
  emailVerified: boolean | null
  name: string | null
}

interface CachedSet {
  keys: Jwk[]
  fetchedAt: number
  forcedAt: number
}

/** Key sets by JWKS URL, shared by every organization using the same provider. */
export class JwksCache {
  readonly #sets = new Map<string, CachedSet>()
  readonly #pending = new Map<string, Promise<CachedSet>>()
  constructor(private readonly now: () => number) {}

  /** The key for `kid` (or the only suitable key when the token names none). */
  async key(jwksUri: string, kid: string | undefined, kty: string): Promise<Jwk> {
    let set = this.#sets.get(jwksUri)
    if (!set || this.now() - set.fetchedAt > JWKS_TTL_MS) set = await this.#fetch(jwksUri, set?.forcedAt ?? 0)
    let found = pick(set.keys, kid, kty)
    if (!found && this.now() - set.forcedAt >= FORCED_REFRESH_MS) {
      // An unknown key id: the provider probably rotated its keys since the set was cached.
      set = await this.#fetch(jwksUri, this.now())
      found = pick(set.keys, kid, kty)
    }
    if (!found) throw new IdTokenError('no key in the provider JWKS matches the token')
    return found
  }

  #fetch(jwksUri: string, forcedAt: number): Promise<CachedSet> {
    const inFlight = this.#pending.get(jwksUri)
    if (inFlight) return inFlight
    const work = (async () => {
      const { status, body } = await providerJson(jwksUri)
      const keys = (body as { keys?: unknown })?.keys
      if (status !== 200 || !Array.isArray(keys)) throw new ProviderError(`the JWKS endpoint answered ${status}`)
      const set = {
        keys: keys.filter((k): k is Jwk => typeof k === 'object' && k !== null),
        fetchedAt: this.now(),
        forcedAt,
      }
      this.#sets.set(jwksUri, set)
      return set
    })().finally(() => this.#pending.delete(jwksUri))
    this.#pending.set(jwksUri, work)
    return work
  }
}

function pick(keys: Jwk[], kid: string | undefined, kty: string): Jwk | undefined {
  const usable = keys.filter((k) => k.kty === kty && (k.use === undefined || k.use === 'sig'))
  if (kid !== undefined) return usable.find((k) => k.kid === kid)
  return usable.length === 1 ? usable[0] : undefined
}

const decoder = new TextDecoder()
function base64url(part: string): Uint8Array<ArrayBuffer> {
  if (!/^[A-Za-z0-9_-]*$/.test(part)) throw new IdTokenError('the token is not a compact JWS')
  return new Uint8Array(Buffer.from(part, 'base64url'))
}
function jsonPart(part: string): Record<string, unknown> {
  try {
    const value = JSON.parse(decoder.decode(base64url(part)))
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value
  } catch {}
  throw new IdTokenError('the token is not a compact JWS')
}

/** Verifies an ID token and returns its claims, or throws IdTokenError / ProviderError. */
export async function verifyIdToken(
  token: string,
  expected: { issuer: string; clientId: string; nonce: string; jwksUri: string; nowMs: number },
  cache: JwksCache,
): Promise<IdTokenClaims> {
  if (token.length > 16 * 1024) throw new IdTokenError('the token is too large')
  const parts = token.split('.')
  if (parts.length !== 3) throw new IdTokenError('the token is not a compact JWS')
  const header = jsonPart(parts[0]!)
  const alg = typeof header.alg === 'string' ? header.alg : ''
  const algorithm = ALGORITHMS[alg]
  if (!algorithm) throw new IdTokenError(`unsupported signing algorithm ${alg.slice(0, 16) || '(none)'}`)
  const kid = typeof header.kid === 'string' ? header.kid : undefined
  const jwk = await cache.key(expected.jwksUri, kid, algorithm.kty)
  if (jwk.alg !== undefined && jwk.alg !== alg) throw new IdTokenError('the key is for another algorithm')
  let valid = false
  try {
    const { kid: _k, alg: _a, use: _u, key_ops: _o, ...material } = jwk
    const key = await crypto.subtle.importKey('jwk', material, algorithm.import, false, ['verify'])
    const signed = new TextEncoder().encode(`${parts[0]}.${parts[1]}`)
    valid = await crypto.subtle.verify(algorithm.verify, key, base64url(parts[2]!), signed)
  } catch {
    valid = false
  }
  if (!valid) throw new IdTokenError('the signature does not verify')
  const claims = jsonPart(parts[1]!)
  if (claims.iss !== expected.issuer) throw new IdTokenError('the token is from another issuer')
  const aud = Array.isArray(claims.aud) ? claims.aud : [claims.aud]
  if (!aud.includes(expected.clientId)) throw new IdTokenError('the token is for another audience')
  if (aud.length > 1 && claims.azp !== expected.clientId) throw new IdTokenError('the token is for another party')
  const now = Math.floor(expected.nowMs / 1000)
  if (typeof claims.exp !== 'number' || claims.exp + CLOCK_SKEW_S <= now) throw new IdTokenError('the token expired')
  if (typeof claims.iat === 'number' && claims.iat - CLOCK_SKEW_S > now)
    throw new IdTokenError('the token was issued in the future')
  if (claims.nonce !== expected.nonce) throw new IdTokenError('the nonce does not match')
  if (typeof claims.sub !== 'string' || claims.sub.length === 0 || claims.sub.length > 255)
    throw new IdTokenError('the token has no usable subject')
  const email =
    typeof claims.email === 'string' && claims.email.length <= 320 ? claims.email.trim().toLowerCase() : null
  const verified = claims.email_verified
  return {
    iss: claims.iss as string,
    sub: claims.sub,
    email,
    emailVerified: typeof verified === 'boolean' ? verified : verified === 'true' ? true : null,
    name: typeof claims.name === 'string' ? claims.name.slice(0, 120) : null,
  }
}
