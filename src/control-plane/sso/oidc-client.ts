/**
 * The relying-party side of OpenID Connect, written against fetch: discovery
 * (`/.well-known/openid-configuration`), the authorization URL with PKCE S256, and the code
 * exchange at the token endpoint. Every call to the provider is bounded by a deadline and a
 * response size, so a slow or hostile issuer cannot hold a request or memory.
 * @module
 */
import { Buffer } from 'node:buffer'
import { controlPlaneError } from '../control-plane-errors.ts'

/** Deadline of one call to the provider. */
export const PROVIDER_TIMEOUT_MS = 5_000
/** Largest provider response read (discovery, JWKS, token). */
export const PROVIDER_MAX_BYTES = 256 * 1024

/** The parts of a provider's metadata this client uses. */
export interface ProviderMetadata {
  issuer: string
  authorization_endpoint: string
  token_endpoint: string
  jwks_uri: string
  token_endpoint_auth_methods_supported?: string[]
  code_challenge_methods_supported?: string[]
}

/** Thrown for anything the provider answered wrong or not at all; `reason` is safe to show. */
export class ProviderError extends Error {
  constructor(readonly reason: string) {
    super(reason)
  }
}

/** https, or http to a loopback host (a provider on this machine, as in tests and development). */
export function acceptableProviderUrl(value: string): URL | null {
  let url: URL
  try {
    url = new URL(value)
  } catch {
    return null
  }
  if (url.username || url.password || url.hash) return null
  if (url.protocol === 'https:') return url
  const loopback = url.hostname === 'localhost' || url.hostname === '127.0.0.1' || url.hostname === '[::1]'
  return url.protocol === 'http:' && loopback ? url : null
}

/** Fetches JSON from the provider with a deadline and a size limit. */
export async function providerJson(url: string, init: RequestInit = {}): Promise<{ status: number; body: unknown }> {
  let response: Response
  try {
    response = await fetch(url, {
      ...init,
      redirect: 'error',
      signal: AbortSignal.timeout(PROVIDER_TIMEOUT_MS),
      headers: { accept: 'application/json', ...(init.headers as Record<string, string> | undefined) },
    })
  } catch (error) {
    const timedOut = error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')
    throw new ProviderError(timedOut ? 'the provider did not answer in time' : 'the provider could not be reached')
  }
  const declared = Number(response.headers.get('content-length') ?? '0')
  if (declared > PROVIDER_MAX_BYTES) {
    await response.body?.cancel()
    throw new ProviderError('the provider answered with too large a body')
  }
  const text = await readCapped(response)
  try {
    return { status: response.status, body: JSON.parse(text) }
  } catch {
    throw new ProviderError(`the provider answered ${response.status} without JSON`)
  }
}

async function readCapped(response: Response): Promise<string> {
  if (!response.body) return ''
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    size += value.byteLength
    if (size > PROVIDER_MAX_BYTES) {
      await reader.cancel()
      throw new ProviderError('the provider answered with too large a body')
    }
    chunks.push(value)
  }
  return new TextDecoder().decode(Buffer.concat(chunks))
}

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value)

/**
 * Reads and checks the issuer's discovery document: its `issuer` must be exactly the configured
 * one (OpenID Connect Discovery §4.3), its endpoints acceptable URLs, and it must offer S256.
 */
export async function discover(issuer: string): Promise<ProviderMetadata> {
  const url = `${issuer.replace(/\/+$/, '')}/.well-known/openid-configuration`
  const { status, body } = await providerJson(url)
  if (status !== 200 || !isObject(body)) throw new ProviderError(`discovery answered ${status}`)
  if (body.issuer !== issuer) throw new ProviderError('the discovery document names another issuer')
  for (const key of ['authorization_endpoint', 'token_endpoint', 'jwks_uri'] as const) {
    if (typeof body[key] !== 'string' || !acceptableProviderUrl(body[key] as string))
      throw new ProviderError(`the discovery document has no usable ${key}`)
  }
  const methods = body.code_challenge_methods_supported
  if (Array.isArray(methods) && !methods.includes('S256'))
    throw new ProviderError('the provider does not support PKCE S256')
  return body as unknown as ProviderMetadata
}

/** Wraps provider failures as 502 `sso_provider_error` with the reason. */
export async function fromProvider<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof ProviderError)
      throw controlPlaneError('sso_provider_error', `The identity provider failed: ${error.reason}`, {
        details: { reason: error.reason },
      })
    throw error
  }
}

/** The authorization request URL (authorization code, PKCE S256, state, nonce). */
export function authorizationUrl(
  metadata: ProviderMetadata,
  input: { clientId: string; redirectUri: string; state: string; nonce: string; challenge: string },
): string {
  const url = new URL(metadata.authorization_endpoint)
  url.searchParams.set('response_type', 'code')
  url.searchParams.set('client_id', input.clientId)
  url.searchParams.set('redirect_uri', input.redirectUri)
  url.searchParams.set('scope', 'openid email profile')
  url.searchParams.set('state', input.state)
  url.searchParams.set('nonce', input.nonce)
  url.searchParams.set('code_challenge', input.challenge)
  url.searchParams.set('code_challenge_method', 'S256')
  return url.toString()
}

/** RFC 6749 §2.3.1: the client id and secret are form-encoded before Basic. */
const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+')

/** Exchanges an authorization code for the ID token; the provider's refusal is a ProviderError. */
export async function exchangeCode(
  metadata: ProviderMetadata,
  input: { clientId: string; clientSecret: string; code: string; redirectUri: string; verifier: string },
): Promise<string> {
  const form = new URLSearchParams({
    grant_type: 'authorization_code',
    code: input.code,
    redirect_uri: input.redirectUri,
    code_verifier: input.verifier,
  })
  const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' }
  const methods = metadata.token_endpoint_auth_methods_supported ?? ['client_secret_basic']
  if (methods.includes('client_secret_basic') || !methods.includes('client_secret_post')) {
    const basic = Buffer.from(`${formEncode(input.clientId)}:${formEncode(input.clientSecret)}`).toString('base64')
    headers.authorization = `Basic ${basic}`
  } else {
    form.set('client_id', input.clientId)
    form.set('client_secret', input.clientSecret)
  }
  const { status, body } = await providerJson(metadata.token_endpoint, { method: 'POST', headers, body: form })
  if (status !== 200 || !isObject(body)) {
    const code = isObject(body) && typeof body.error === 'string' ? body.error.slice(0, 64) : `status ${status}`
    throw new ProviderError(`the token endpoint refused the code (${code})`)
  }
  if (typeof body.id_token !== 'string') throw new ProviderError('the token response has no id_token')
  return body.id_token
}
