/**
 * The client side of the device authorization grant (RFC 8628), for programs of this repository
 * that sign in to a control plane from a terminal: `service-server org token` and a workspace
 * linking itself to its organization. It asks for a device code, hands the verification URL and
 * code to `onCode`, polls at the server's interval (5 s more on `slow_down`; network failures are
 * retried until the code expires) and returns the token response.
 * @module
 */

/** The device grant's type. */
export const DEVICE_CODE_GRANT = 'urn:ietf:params:oauth:grant-type:device_code'

/** What the person is shown. */
export interface DeviceCodePrompt {
  userCode: string
  verificationUri: string
  verificationUriComplete: string
  expiresIn: number
}

/** The token endpoint's answer. */
export interface DeviceLoginTokens {
  access_token: string
  refresh_token: string
  expires_in: number
  scope: string
  organization: { id: string; name: string }
}

/** Why a sign-in ended without a token; `code` is the OAuth error or `unreachable`. */
export class DeviceLoginError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message)
    this.name = 'DeviceLoginError'
  }
}

/** Options for {@link deviceLogin}. */
export interface DeviceLoginOptions {
  /** The control plane's base URL. */
  baseUrl: string
  clientId: string
  scope?: string
  onCode(prompt: DeviceCodePrompt): void
  fetch?: typeof fetch
  /** Waits `ms`; tests pass a fast one. */
  sleep?: (ms: number) => Promise<void>
  /** Each request's deadline (default 30 s). */
  requestTimeoutMs?: number
}

async function postForm(
  options: DeviceLoginOptions,
  path: string,
  fields: Record<string, string>,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await (options.fetch ?? fetch)(`${options.baseUrl.replace(/\/+$/, '')}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' },
    body: new URLSearchParams(fields).toString(),
    signal: AbortSignal.timeout(options.requestTimeoutMs ?? 30_000),
  })
  const body = (await response.json().catch(() => ({}))) as Record<string, unknown>
  return { status: response.status, body: typeof body === 'object' && body !== null ? body : {} }
}

const text = (value: unknown) => (typeof value === 'string' ? value : '')

/** Runs the device sign-in; resolves with the tokens or rejects with a {@link DeviceLoginError}. */
export async function deviceLogin(options: DeviceLoginOptions): Promise<DeviceLoginTokens> {
  const sleep = options.sleep ?? ((ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms)))
  let started: { status: number; body: Record<string, unknown> }
  try {
    started = await postForm(options, '/oauth/device_authorization', {
      client_id: options.clientId,
      ...(options.scope ? { scope: options.scope } : {}),
    })
  } catch (error) {
    throw new DeviceLoginError('unreachable', `Could not reach ${options.baseUrl}: ${(error as Error).message}`)
  }
  const deviceCode = text(started.body.device_code)
  const userCode = text(started.body.user_code)
  if (started.status !== 200 || !deviceCode || !userCode) {
    throw new DeviceLoginError(
      text(started.body.error) || `http_${started.status}`,
      `Sign-in could not start: ${text(started.body.error_description) || `the server answered ${started.status}`}`,
    )
  }
  const expiresIn = Number(started.body.expires_in) > 0 ? Number(started.body.expires_in) : 600
  let interval = Number(started.body.interval) > 0 ? Number(started.body.interval) : 5
  const verificationUri = text(started.body.verification_uri)
  options.onCode({
    userCode,
    verificationUri,
    verificationUriComplete: text(started.body.verification_uri_complete) || verificationUri,
    expiresIn,
  })
  const expired = () => new DeviceLoginError('expired_token', 'The code expired before it was approved; sign in again')
  let waited = 0
  while (waited < expiresIn) {
    await sleep(interval * 1000)
    waited += interval
    let answer: { status: number; body: Record<string, unknown> }
    try {
      answer = await postForm(options, '/oauth/token', {
        grant_type: DEVICE_CODE_GRANT,
        device_code: deviceCode,
        client_id: options.clientId,
      })
    } catch {
      continue
    }
    if (answer.status === 200 && text(answer.body.access_token)) return answer.body as unknown as DeviceLoginTokens
    const error = text(answer.body.error)
    if (error === 'authorization_pending') continue
    if (error === 'slow_down') {
      interval += 5
      continue
    }
    if (error === 'access_denied') throw new DeviceLoginError(error, 'The sign-in was denied')
    if (error === 'expired_token') throw expired()
    // A 5xx or 429 is the server's trouble, not an answer: keep polling until the code expires.
    if (answer.status >= 500 || answer.status === 429) continue
    throw new DeviceLoginError(
      error || `http_${answer.status}`,
      `Sign-in failed: ${text(answer.body.error_description) || error}`,
    )
  }
  throw expired()
}
