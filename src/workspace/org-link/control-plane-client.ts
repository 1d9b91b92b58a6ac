/**
 * The workspace's HTTP client for its organization's control plane: the device authorization
 * grant (RFC 8628, client `service-workspace`), token refresh, `GET /v1/me/delivery` and the
 * `GET /v1/events` SSE feed. Every request has a deadline and a body-size cap, redirects are
 * refused (a redirect would carry the bearer token to another origin), and failures are sorted
 * into the three cases the link acts on: `unreachable` (network, timeout, 5xx: retry later),
 * `revoked` (401/403: stop and tell the host) and `invalid` (the answer is not what the contract
 * says). Tokens never appear in an error message.
 * @module
 */

/** The OAuth client id of a linked workspace (pre-registered on the control plane). */
export const WORKSPACE_CLIENT_ID = 'service-workspace'
/** The only scope a linked workspace asks for. */
export const DELIVERY_SCOPE = 'delivery:read'

/** Deadlines and caps (tests shorten them). */
export interface ClientLimits {
  /** Deadline of one request (headers and body). */
  requestTimeoutMs: number
  /** A feed that sends nothing (not even a heartbeat comment) for this long is reconnected. */
  idleTimeoutMs: number
  /** Largest delivery document read. */
  maxDeliveryBytes: number
  /** Largest answer of the OAuth endpoints. */
  maxSmallBytes: number
}

/** Defaults: 30 s per request, 45 s of feed silence (the control plane comments every 15 s), 512 MiB. */
export const DEFAULT_CLIENT_LIMITS: ClientLimits = {
  requestTimeoutMs: 30_000,
  idleTimeoutMs: 45_000,
  maxDeliveryBytes: 512 * 1024 * 1024,
  maxSmallBytes: 64 * 1024,
}

/** Why a control-plane call failed. */
export class ControlPlaneError extends Error {
  constructor(
    readonly kind: 'unreachable' | 'revoked' | 'invalid',
    message: string,
    readonly status = 0,
  ) {
    super(message)
    this.name = 'ControlPlaneError'
  }
}

/** The device authorization answer (RFC 8628 §3.2). */
export interface DeviceAuthorization {
  deviceCode: string
  userCode: string
  verificationUri: string
  verificationUriComplete: string
  expiresIn: number
  interval: number
}

/** Tokens from the token endpoint. */
export interface IssuedTokens {
  accessToken: string
  refreshToken: string | null
  /** Epoch ms, or null when the answer gave no lifetime. */
  expiresAt: number | null
  organization: { id: string; name: string } | null
}

/** One poll of the token endpoint during the device flow. */
export type DevicePoll =
  | { status: 'pending' }
  | { status: 'slow_down' }
  | { status: 'denied' }
  | { status: 'expired' }
  | { status: 'ok'; tokens: IssuedTokens }

/** One event of the feed. */
export interface FeedEvent {
  id: string | null
  event: string
  data: string
}

/**
 * Checks a control-plane URL as the host typed it: http(s), no credentials, query or fragment.
 * Returns it without a trailing slash; null when unusable.
 */
export function normalizeControlPlaneUrl(raw: string): string | null {
  let url: URL
  try {
    url = new URL(raw.trim())
  } catch {
    return null
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
  if (url.username || url.password || url.search || url.hash) return null
  return url.toString().replace(/\/+$/, '')
}

async function readCapped(response: Response, max: number): Promise<Uint8Array> {
  const declared = Number(response.headers.get('content-length'))
  if (Number.isFinite(declared) && declared > max) {
    await response.body?.cancel()
    throw new ControlPlaneError('invalid', `answer larger than ${max} bytes`, response.status)
  }
  if (!response.body) return new Uint8Array()
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let total = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    total += value.byteLength
    if (total > max) {
      await reader.cancel()
      throw new ControlPlaneError('invalid', `answer larger than ${max} bytes`, response.status)
    }
    chunks.push(value)
  }
  const out = new Uint8Array(total)
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.byteLength
  }
  return out
}

function parseJson(bytes: Uint8Array, status: number): Record<string, unknown> {
  try {
    const value = JSON.parse(new TextDecoder().decode(bytes))
    if (typeof value === 'object' && value !== null && !Array.isArray(value)) return value as Record<string, unknown>
  } catch {
    // fall through
  }
  throw new ControlPlaneError('invalid', 'answer is not a JSON object', status)
}

const str = (value: unknown): string | null => (typeof value === 'string' && value !== '' ? value : null)

function tokensOf(body: Record<string, unknown>, now: number): IssuedTokens {
  const accessToken = str(body.access_token)
  if (!accessToken) throw new ControlPlaneError('invalid', 'token answer has no access_token')
  const expiresIn = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : null
  const org = body.organization as Record<string, unknown> | undefined
  return {
    accessToken,
    refreshToken: str(body.refresh_token),
    expiresAt: expiresIn === null ? null : now + expiresIn * 1000,
    organization: org && str(org.id) && str(org.name) ? { id: String(org.id), name: String(org.name) } : null,
  }
}

/** Talks to one control plane. */
export class ControlPlaneClient {
  constructor(
    readonly baseUrl: string,
    private readonly limits: ClientLimits = DEFAULT_CLIENT_LIMITS,
    private readonly now: () => number = Date.now,
  ) {}

  async #request(
    path: string,
    init: { method?: string; token?: string; form?: Record<string, string>; accept?: string; signal?: AbortSignal },
  ): Promise<Response> {
    const signals = [AbortSignal.timeout(this.limits.requestTimeoutMs)]
    if (init.signal) signals.push(init.signal)
    try {
      return await fetch(`${this.baseUrl}${path}`, {
        method: init.method ?? 'GET',
        redirect: 'manual',
        headers: {
          accept: init.accept ?? 'application/json',
          ...(init.token ? { authorization: `Bearer ${init.token}` } : {}),
          ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded' } : {}),
        },
        body: init.form ? new URLSearchParams(init.form).toString() : undefined,
        signal: AbortSignal.any(signals),
      })
    } catch (error) {
      if (init.signal?.aborted) throw error
      const name = (error as Error).name
      throw new ControlPlaneError(
        'unreachable',
        name === 'TimeoutError' ? `no answer within ${this.limits.requestTimeoutMs} ms` : 'connection failed',
      )
    }
  }

  /** Sorts a non-2xx answer into unreachable (5xx, 429, redirects), revoked (401/403) or invalid. */
  async #failure(response: Response, what: string): Promise<never> {
    await response.body?.cancel().catch(() => {})
    const status = response.status
    if (status === 401 || status === 403)
      throw new ControlPlaneError('revoked', `${what}: the control plane refused the token (${status})`, status)
    if (status >= 500 || status === 429 || status === 408)
      throw new ControlPlaneError('unreachable', `${what}: control plane answered ${status}`, status)
    throw new ControlPlaneError('invalid', `${what}: control plane answered ${status}`, status)
  }

  /** Starts the device flow (`POST /oauth/device_authorization`). */
  async deviceAuthorization(signal?: AbortSignal): Promise<DeviceAuthorization> {
    const response = await this.#request('/oauth/device_authorization', {
      method: 'POST',
      form: { client_id: WORKSPACE_CLIENT_ID, scope: DELIVERY_SCOPE },
      signal,
    })
    if (!response.ok) return this.#failure(response, 'device authorization')
    const body = parseJson(await readCapped(response, this.limits.maxSmallBytes), response.status)
    const deviceCode = str(body.device_code)
    const userCode = str(body.user_code)
    const verificationUri = str(body.verification_uri)
    if (!deviceCode || !userCode || !verificationUri)
      throw new ControlPlaneError('invalid', 'device authorization answer is incomplete')
    const expiresIn = typeof body.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : 600
    const interval = typeof body.interval === 'number' && body.interval > 0 ? body.interval : 5
    return {
      deviceCode,
      userCode,
      verificationUri,
      verificationUriComplete: str(body.verification_uri_complete) ?? verificationUri,
      expiresIn: Math.min(expiresIn, 3600),
      interval: Math.min(interval, 60),
    }
  }

  /** One poll of `POST /oauth/token` with the device code. */
  async pollDeviceToken(deviceCode: string, signal?: AbortSignal): Promise<DevicePoll> {
    const response = await this.#request('/oauth/token', {
      method: 'POST',
      form: {
        grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
        device_code: deviceCode,
        client_id: WORKSPACE_CLIENT_ID,
      },
      signal,
    })
    if (response.status >= 500) return this.#failure(response, 'token')
    const body = parseJson(await readCapped(response, this.limits.maxSmallBytes), response.status)
    if (response.ok) return { status: 'ok', tokens: tokensOf(body, this.now()) }
    switch (body.error) {
      case 'authorization_pending':
        return { status: 'pending' }
      case 'slow_down':
        return { status: 'slow_down' }
      case 'access_denied':
        return { status: 'denied' }
      case 'expired_token':
        return { status: 'expired' }
      default:
        throw new ControlPlaneError('invalid', `token endpoint answered ${response.status}`, response.status)
    }
  }

  /** Exchanges a refresh token (`grant_type=refresh_token`); `revoked` when it is no longer good. */
  async refresh(refreshToken: string, signal?: AbortSignal): Promise<IssuedTokens> {
    const response = await this.#request('/oauth/token', {
      method: 'POST',
      form: { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: WORKSPACE_CLIENT_ID },
      signal,
    })
    if (response.status >= 500) return this.#failure(response, 'refresh')
    const body = parseJson(await readCapped(response, this.limits.maxSmallBytes), response.status)
    if (response.ok) return tokensOf(body, this.now())
    throw new ControlPlaneError(
      'revoked',
      `refresh refused (${String(body.error ?? response.status)})`,
      response.status,
    )
  }

  /** `GET /v1/me/delivery` as parsed JSON (checked by `parseDelivery`). */
  async delivery(token: string, signal?: AbortSignal): Promise<Record<string, unknown>> {
    const response = await this.#request('/v1/me/delivery', { token, signal })
    if (!response.ok) return this.#failure(response, 'delivery')
    return parseJson(await readCapped(response, this.limits.maxDeliveryBytes), response.status)
  }

  /**
   * Follows `GET /v1/events` from `lastEventId` (null: from now). `onOpen` runs once the stream
   * answered 200, `onEvent` for every event in order. Resolves when the control plane ends the
   * stream or it stays silent longer than the idle deadline; rejects with a ControlPlaneError when
   * it cannot be opened; `signal` stops it (resolves).
   */
  async follow(
    token: string,
    lastEventId: string | null,
    handlers: { onOpen(): void; onEvent(event: FeedEvent): void },
    signal: AbortSignal,
  ): Promise<void> {
    const idle = new AbortController()
    const stop = AbortSignal.any([signal, idle.signal])
    let response: Response
    try {
      response = await fetch(`${this.baseUrl}/v1/events`, {
        redirect: 'manual',
        headers: {
          accept: 'text/event-stream',
          authorization: `Bearer ${token}`,
          ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
        },
        signal: AbortSignal.any([stop, AbortSignal.timeout(this.limits.requestTimeoutMs)]),
      })
    } catch {
      if (signal.aborted) return
      throw new ControlPlaneError('unreachable', 'event feed: connection failed')
    }
    if (!response.ok) return this.#failure(response, 'event feed')
    if (!(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      await response.body?.cancel().catch(() => {})
      throw new ControlPlaneError('invalid', 'event feed: not an event stream', response.status)
    }
    handlers.onOpen()
    const reader = response.body!.getReader()
    let timer: ReturnType<typeof setTimeout> | undefined
    const arm = () => {
      clearTimeout(timer)
      timer = setTimeout(() => {
        idle.abort()
        void reader.cancel().catch(() => {})
      }, this.limits.idleTimeoutMs)
    }
    const onStop = () => void reader.cancel().catch(() => {})
    stop.addEventListener('abort', onStop, { once: true })
    const decoder = new TextDecoder()
    let buffer = ''
    let event: FeedEvent = { id: null, event: 'message', data: '' }
    let hasData = false
    try {
      arm()
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }))
        if (done || stop.aborted) return
        arm()
        buffer += decoder.decode(value, { stream: true })
        // A line longer than the cap is a broken or hostile stream, not an event.
        if (buffer.length > this.limits.maxSmallBytes * 16)
          throw new ControlPlaneError('invalid', 'event feed: line too long')
        let newline: number
        while ((newline = buffer.search(/\r\n|\r|\n/)) >= 0) {
          const line = buffer.slice(0, newline)
          buffer = buffer.slice(newline + (buffer.startsWith('\r\n', newline) ? 2 : 1))
          if (line === '') {
            if (hasData) handlers.onEvent(event)
            event = { id: event.id, event: 'message', data: '' }
            hasData = false
            continue
          }
          if (line.startsWith(':')) continue
          const colon = line.indexOf(':')
          const field = colon < 0 ? line : line.slice(0, colon)
          const raw = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
          if (field === 'id') event.id = raw
          else if (field === 'event') event.event = raw
          else if (field === 'data') {
            event.data = hasData ? `${event.data}\n${raw}` : raw
            hasData = true
          }
        }
      }
    } finally {
      clearTimeout(timer)
      stop.removeEventListener('abort', onStop)
      await reader.cancel().catch(() => {})
    }
  }
}
