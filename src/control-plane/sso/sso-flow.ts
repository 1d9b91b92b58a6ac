/**
 * The sign-in flow with an organization's provider: start (state, nonce and PKCE verifier kept
 * server-side, used once, ten minutes), callback (state, code exchange, ID token verification,
 * account by (issuer, subject), just-in-time membership under the admission policy), then a
 * one-time hand-off code the console exchanges for a normal session, so the session token never
 * travels in a URL.
 *
 * Accounts are linked by the provider's subject, never by email alone: a first sign-in whose email
 * already has an account is refused (`sso_account_exists`) until that account's signed-in owner
 * links it (`POST /v1/org/sso/link`), and a subject never moves to another account.
 * @module
 */
import { Buffer } from 'node:buffer'
import { createHash } from 'node:crypto'
import { ApiError } from '../../core/errors.ts'
import { newId } from '../../core/ids.ts'
import { generateToken, hashToken, secretsEqual } from '../../core/secrets.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { createSession } from '../identity/sessions.ts'
import { noteAuditActor } from '../audit/request-audit.ts'
import { toUserView } from '../identity/users-view.ts'
import type { SignedIn } from '../identity/accounts.ts'
import { IdTokenError, JwksCache, verifyIdToken, type IdTokenClaims } from './id-token.ts'
import {
  authorizationUrl,
  discover,
  exchangeCode,
  fromProvider,
  ProviderError,
  type ProviderMetadata,
} from './oidc-client.ts'
import { admitPerson } from './sso-accounts.ts'
import { connectionBySlug, redirectUriOf } from './sso-connections.ts'
import type { SsoConnectionTable } from './sso-tables.ts'

/** How long a started sign-in may come back. */
export const LOGIN_TTL_MS = 10 * 60_000
/** How long the console has to exchange the hand-off code. */
export const HANDOFF_TTL_MS = 2 * 60_000
/** Started sign-ins kept per organization at once; past it, starts are refused until some expire. */
export const MAX_PENDING_LOGINS = 1000
/** How long a discovery document is reused. */
const DISCOVERY_TTL_MS = 3600_000

/** Where the console is when no return path is given. */
const DEFAULT_RETURN = '/console/'

/**
 * A same-origin return path: starts with one `/`, no scheme, host or backslash, within the console.
 * Anything else falls back to the console's root, so the callback can never redirect off-site.
 */
export function safeReturnPath(value: string | undefined): string {
  if (!value || value.length > 512) return DEFAULT_RETURN
  if (!value.startsWith('/') || value.startsWith('//') || /[\\\s\u0000-\u001f]/.test(value)) return DEFAULT_RETURN
  let url: URL
  try {
    url = new URL(value, 'http://same.invalid')
  } catch {
    return DEFAULT_RETURN
  }
  if (url.origin !== 'http://same.invalid' || !(url.pathname === '/console' || url.pathname.startsWith('/console/')))
    return DEFAULT_RETURN
  return `${url.pathname}${url.search}${url.hash}`
}

/** The provider-facing parts: cached discovery and key sets. One per control plane. */
export class SsoProviders {
  readonly jwks: JwksCache
  readonly #discovery = new Map<string, { metadata: ProviderMetadata; at: number }>()
  constructor(private readonly now: () => number) {
    this.jwks = new JwksCache(now)
  }
  async metadata(issuer: string): Promise<ProviderMetadata> {
    const cached = this.#discovery.get(issuer)
    if (cached && this.now() - cached.at < DISCOVERY_TTL_MS) return cached.metadata
    const metadata = await discover(issuer)
    this.#discovery.set(issuer, { metadata, at: this.now() })
    return metadata
  }
}

const b64url = (bytes: Uint8Array) => Buffer.from(bytes).toString('base64url')

/** The cookie that ties a sign-in to the browser that started it (Path `/v1/sso/`, ten minutes). */
export const BINDING_COOKIE = 'sso_binding'

/** A started sign-in: where to send the browser, and the value of its binding cookie. */
export interface StartedSignIn {
  url: string
  binding: string
}

/**
 * Starts a sign-in (or, with `linkUserId`, the linking of that signed-in account). Its state is
 * also bound to a random value the browser keeps in a cookie and must bring back to the callback,
 * so a callback URL carried to another browser (login CSRF: signing a victim into the attacker's
 * account, or linking the victim's provider account to the attacker's) is refused there.
 */
export async function startSignIn(
  deps: Deps,
  providers: SsoProviders,
  input: { connection: SsoConnectionTable; base: string; returnTo?: string; linkUserId?: string },
): Promise<StartedSignIn> {
  const { connection } = input
  const metadata = await fromProvider(() => providers.metadata(connection.issuer))
  const state = generateToken('')
  const nonce = generateToken('')
  const verifier = generateToken('')
  const challenge = b64url(createHash('sha256').update(verifier).digest())
  const binding = generateToken('')
  const id = newId('ssl')
  await deps.db.transaction().execute(async (trx) => {
    await trx.deleteFrom('sso_login').where('expires_at', '<', isoAt(deps)).execute()
    const pending = await trx
      .selectFrom('sso_login')
      .select((eb) => eb.fn.countAll<number>().as('n'))
      .where('org_id', '=', connection.org_id)
      .executeTakeFirstOrThrow()
    if (Number(pending.n) >= MAX_PENDING_LOGINS)
      throw controlPlaneError('sso_busy', 'Too many sign-ins are in progress for this organization; try again shortly')
    await trx
      .insertInto('sso_login')
      .values({
        id,
        org_id: connection.org_id,
        state_hash: hashToken(state),
        secrets_sealed: deps.secrets.seal(JSON.stringify({ nonce, verifier, browser: hashToken(binding) }), id),
        return_to: safeReturnPath(input.returnTo),
        link_user_id: input.linkUserId ?? null,
        status: 'started',
        user_id: null,
        handoff_hash: null,
        created_at: isoAt(deps),
        expires_at: isoAt(deps, LOGIN_TTL_MS),
      })
      .execute()
  })
  const url = authorizationUrl(metadata, {
    clientId: connection.client_id,
    redirectUri: redirectUriOf(input.base, connection.slug),
    state,
    nonce,
    challenge,
  })
  return { url, binding }
}

const stateInvalid = (reason: string) =>
  controlPlaneError('sso_state_invalid', 'The sign-in is unknown, used or expired; start again', {
    details: { reason },
  })

/** What the provider sent back to the callback. */
export interface CallbackInput {
  slug: string
  base: string
  state?: string
  code?: string
  error?: string
  iss?: string
  /** The binding cookie the browser brought back. */
  binding?: string
}

/**
 * Finishes a sign-in: returns where to send the browser (the return path with the hand-off code in
 * its fragment). Failures are ApiErrors with stable codes; the route turns them into a redirect.
 */
export async function finishSignIn(deps: Deps, providers: SsoProviders, input: CallbackInput): Promise<string> {
  if (!input.state) throw stateInvalid('missing')
  const connection = await connectionBySlug(deps.db, input.slug)
  // The callback's audit event belongs to this organization, refused or not.
  noteAuditActor({ orgId: connection.org_id })
  // Used once: the row moves out of `started` before anything else happens, so a replayed callback
  // (the same state and code again) is refused here and its code never reaches the provider twice.
  const login = await deps.db
    .selectFrom('sso_login')
    .selectAll()
    .where('state_hash', '=', hashToken(input.state))
    .executeTakeFirst()
  if (!login || login.org_id !== connection.org_id) throw stateInvalid('unknown')
  const { nonce, verifier, browser } = JSON.parse(deps.secrets.open(login.secrets_sealed, login.id)) as {
    nonce: string
    verifier: string
    browser: string
  }
  // Checked before the state is used, so a callback URL replayed elsewhere cannot spend it.
  if (!input.binding || !secretsEqual(hashToken(input.binding), browser)) throw stateInvalid('other_browser')
  const claimed = await deps.db
    .updateTable('sso_login')
    .set({ status: 'used' })
    .where('id', '=', login.id)
    .where('status', '=', 'started')
    .executeTakeFirst()
  if (Number(claimed.numUpdatedRows) !== 1) throw stateInvalid('used')
  if (Date.parse(login.expires_at) <= deps.now()) throw stateInvalid('expired')
  if (input.error)
    throw controlPlaneError('sso_provider_denied', 'The identity provider did not sign you in', {
      details: { error: input.error.slice(0, 64) },
    })
  // RFC 9207: a response naming another issuer is a mix-up attack.
  if (input.iss !== undefined && input.iss !== connection.issuer) throw stateInvalid('issuer_mismatch')
  if (!input.code) throw stateInvalid('no_code')
  const claims = await verified(async () => {
    const metadata = await providers.metadata(connection.issuer)
    const idToken = await exchangeCode(metadata, {
      clientId: connection.client_id,
      clientSecret: deps.secrets.open(connection.client_secret_sealed, connection.org_id),
      code: input.code!,
      redirectUri: redirectUriOf(input.base, connection.slug),
      verifier,
    })
    return verifyIdToken(
      idToken,
      { issuer: metadata.issuer, clientId: connection.client_id, nonce, jwksUri: metadata.jwks_uri, nowMs: deps.now() },
      providers.jwks,
    )
  })
  const admit = () =>
    deps.db.transaction().execute((trx) => admitPerson(deps, trx, connection, claims, login.link_user_id))
  // Two first sign-ins of one subject at once: the loser hits the (issuer, subject) constraint and
  // finds the winner's account on the second try.
  const { userId, memberId } = await admit().catch((error) => {
    if (isUniqueViolation(error)) return admit()
    throw error
  })
  noteAuditActor({ userId, orgId: connection.org_id, memberId })
  const handoff = generateToken('ssh_')
  await deps.db
    .updateTable('sso_login')
    .set({
      status: 'authenticated',
      user_id: userId,
      handoff_hash: hashToken(handoff),
      expires_at: isoAt(deps, HANDOFF_TTL_MS),
    })
    .where('id', '=', login.id)
    .execute()
  const [path, fragment] = splitFragment(login.return_to)
  const then = fragment ? `&then=${encodeURIComponent(fragment)}` : ''
  return `${path}#sso_handoff=${handoff}${then}`
}

function splitFragment(path: string): [string, string] {
  const at = path.indexOf('#')
  return at < 0 ? [path, ''] : [path.slice(0, at), path.slice(at + 1)]
}

async function verified(work: () => Promise<IdTokenClaims>): Promise<IdTokenClaims> {
  try {
    return await work()
  } catch (error) {
    if (error instanceof IdTokenError)
      throw controlPlaneError('sso_id_token_invalid', `The ID token was refused: ${error.reason}`, {
        details: { reason: error.reason },
      })
    if (error instanceof ProviderError)
      throw controlPlaneError('sso_provider_error', `The identity provider failed: ${error.reason}`, {
        details: { reason: error.reason },
      })
    throw error
  }
}

/** Exchanges a hand-off code (once, within two minutes) for a session signed in by the organization's provider. */
export async function exchangeHandoff(deps: Deps, handoff: string): Promise<SignedIn> {
  const refused = () => controlPlaneError('sso_handoff_invalid', 'The sign-in hand-off is unknown, used or expired')
  if (!handoff.startsWith('ssh_')) throw refused()
  return deps.db.transaction().execute(async (trx) => {
    const login = await trx
      .selectFrom('sso_login')
      .selectAll()
      .where('handoff_hash', '=', hashToken(handoff))
      .executeTakeFirst()
    if (!login?.user_id || Date.parse(login.expires_at) <= deps.now()) throw refused()
    const taken = await trx
      .updateTable('sso_login')
      .set({ status: 'done' })
      .where('id', '=', login.id)
      .where('status', '=', 'authenticated')
      .executeTakeFirst()
    if (Number(taken.numUpdatedRows) !== 1) throw refused()
    const user = await trx.selectFrom('app_user').selectAll().where('id', '=', login.user_id).executeTakeFirstOrThrow()
    const session = await createSession(deps, trx, user.id, login.org_id, login.org_id)
    return { user: toUserView(user), session }
  })
}

/** True for the errors the callback turns into a redirect to the console (the rest are 500s). */
export function isSignInRefusal(error: unknown): error is ApiError {
  return (
    (error instanceof ApiError && error.status < 500) ||
    (error instanceof ApiError && error.code === 'sso_provider_error')
  )
}
