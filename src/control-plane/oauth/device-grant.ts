/**
 * The device authorization grant (RFC 8628). A terminal asks for a device code and a short user
 * code; the person opens the verification page in a signed-in console, sees which client asks for
 * what, picks the organization and approves or denies; the terminal polls the token endpoint until
 * then. Both codes are stored as SHA-256 only. User codes are 8 letters from an alphabet without
 * vowels or look-alikes (about 34 bits); guessing is bounded by the per-person lookup throttle
 * (see device-routes.ts) and by the 10-minute life of a request.
 * @module
 */
import { newId } from '../../core/ids.ts'
import { randomBytes } from '../../core/random-bytes.ts'
import { generateToken, hashToken } from '../../core/secrets.ts'
import { membershipOf, type Membership } from '../admin/organizations.ts'
import { recordAudit } from '../admin/audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { BUILT_IN_CLIENTS, DEVICE_CODE_GRANT, type OAuthClient } from './oauth-clients.ts'
import { oauthError } from './oauth-error.ts'
import { formatScopes, SCOPE_DESCRIPTIONS, storedScopes, type OAuthScope } from './oauth-scopes.ts'
import type { OAuthDeviceRequestTable } from './oauth-tables.ts'
import { grantActor, issueGrant, type TokenResponse } from './oauth-tokens.ts'
import { requestedScopes, validResource } from './oauth-requests.ts'
import { deviceVerificationUri } from './issuer.ts'

/** How long a device request waits for approval (RFC 8628 §3.2 `expires_in`). */
export const DEVICE_REQUEST_TTL_MS = 10 * 60_000
/** The polling interval a client is told, in seconds; each `slow_down` adds 5 (§3.5). */
export const DEVICE_POLL_INTERVAL_S = 5
/** Pending requests one client address may hold at once. */
export const MAX_PENDING_PER_ADDRESS = 20
/** RFC 8628 §6.1: consonants only (no vowels, so no words), and none that look alike. */
const USER_CODE_ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ'
const USER_CODE_LENGTH = 8

/** What `POST /oauth/device_authorization` answers (§3.2). */
export interface DeviceAuthorizationResponse {
  device_code: string
  user_code: string
  verification_uri: string
  verification_uri_complete: string
  expires_in: number
  interval: number
}

/** What the console shows about a pending request. */
export interface DeviceRequestView {
  userCode: string
  client: { id: string; name: string }
  scopes: Array<{ scope: OAuthScope; description: string }>
  resource: string | null
  expiresAt: string
}

/** A new user code, `XXXX-XXXX`; rejection sampling keeps every letter equally likely. */
export function newUserCode(): string {
  let code = ''
  while (code.length < USER_CODE_LENGTH) {
    for (const byte of randomBytes(16)) {
      // 240 is the largest multiple of 20 below 256: bytes above it would favour the first letters.
      if (byte < 240 && code.length < USER_CODE_LENGTH) code += USER_CODE_ALPHABET[byte % 20]
    }
  }
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/**
 * A typed user code in canonical form (upper case, no separators or spaces), or null when it
 * cannot be one of ours, so a typo costs no database lookup but still counts as an attempt.
 */
export function normalizeUserCode(input: string): string | null {
  const code = input.toUpperCase().replace(/[\s-]/g, '')
  if (code.length !== USER_CODE_LENGTH) return null
  for (const char of code) if (!USER_CODE_ALPHABET.includes(char)) return null
  return code
}

function formatUserCode(code: string): string {
  return `${code.slice(0, 4)}-${code.slice(4)}`
}

/** The device client for a `client_id`: a built-in client (they are the ones with this grant). */
export function deviceClient(clientId: string): OAuthClient {
  const client = BUILT_IN_CLIENTS.get(clientId)
  if (!client) throw oauthError('invalid_client', 'Unknown client_id', 401)
  if (!client.grantTypes.includes(DEVICE_CODE_GRANT))
    throw oauthError('unauthorized_client', 'This client may not use the device grant')
  return client
}

/** Starts a device authorization (§3.1–3.2). */
export async function startDeviceAuthorization(
  deps: Deps,
  input: { clientId: string; scope?: string; resource?: string; address: string | null; issuer: string },
): Promise<DeviceAuthorizationResponse> {
  const client = deviceClient(input.clientId)
  const scopes = requestedScopes(client, input.scope)
  const resource = input.resource === undefined ? null : validResource(input.resource)
  const addressHash = input.address ? hashToken(`address:${input.address}`) : null
  const now = isoAt(deps)
  // Requests long past their expiry are deleted as new ones arrive: the table stays small without a timer.
  await deps.db.deleteFrom('oauth_device_request').where('expires_at', '<', isoAt(deps, -3600_000)).execute()
  if (addressHash) {
    const pending = await deps.db
      .selectFrom('oauth_device_request')
      .select((eb) => eb.fn.countAll<number>().as('count'))
      .where('address_hash', '=', addressHash)
      .where('expires_at', '>', now)
      .where('status', '=', 'pending')
      .executeTakeFirstOrThrow()
    if (Number(pending.count) >= MAX_PENDING_PER_ADDRESS)
      throw oauthError('slow_down', 'Too many pending device requests from this address; finish or wait for one', 429)
  }
  const deviceCode = generateToken('odc_')
  const interval = deps.settings.oauthDeviceIntervalSeconds ?? DEVICE_POLL_INTERVAL_S
  for (let attempt = 0; ; attempt++) {
    const userCode = newUserCode()
    const row: OAuthDeviceRequestTable = {
      id: newId('odr', deps.now()),
      device_code_hash: hashToken(deviceCode),
      user_code_hash: hashToken(normalizeUserCode(userCode)!),
      client_id: client.id,
      scope: formatScopes(scopes),
      resource,
      status: 'pending',
      interval_seconds: interval,
      last_polled_at: null,
      org_id: null,
      member_id: null,
      user_id: null,
      decided_at: null,
      grant_id: null,
      address_hash: addressHash,
      created_at: now,
      expires_at: isoAt(deps, DEVICE_REQUEST_TTL_MS),
    }
    try {
      await deps.db.insertInto('oauth_device_request').values(row).execute()
    } catch (error) {
      // A user code collision (the unique index) is retried with a new code; anything else is real.
      const taken = await deps.db
        .selectFrom('oauth_device_request')
        .select('id')
        .where('user_code_hash', '=', row.user_code_hash)
        .executeTakeFirst()
      if (taken && attempt < 5) continue
      throw error
    }
    return {
      device_code: deviceCode,
      user_code: userCode,
      verification_uri: deviceVerificationUri(input.issuer),
      // The code rides in the fragment: browsers never send it, so it is in no server or proxy log.
      verification_uri_complete: `${deviceVerificationUri(input.issuer)}=${userCode}`,
      expires_in: Math.floor(DEVICE_REQUEST_TTL_MS / 1000),
      interval,
    }
  }
}

/** The token endpoint's device-code grant (§3.4–3.5). */
export async function pollDeviceToken(deps: Deps, clientId: string, deviceCode: string): Promise<TokenResponse> {
  const client = deviceClient(clientId)
  const row = await deps.db
    .selectFrom('oauth_device_request')
    .selectAll()
    .where('device_code_hash', '=', hashToken(deviceCode))
    .executeTakeFirst()
  if (!row || row.client_id !== client.id) throw oauthError('invalid_grant', 'Unknown device_code')
  if (row.status === 'issued') throw oauthError('invalid_grant', 'The device_code was already exchanged')
  const now = deps.now()
  if (Date.parse(row.expires_at) <= now)
    throw oauthError('expired_token', 'The device code expired; start the sign-in again')
  if (row.status === 'denied') throw oauthError('access_denied', 'The request was denied')
  if (row.status === 'pending') {
    const early = row.last_polled_at !== null && now - Date.parse(row.last_polled_at) < row.interval_seconds * 1000
    await deps.db
      .updateTable('oauth_device_request')
      .set({
        last_polled_at: isoAt(deps),
        interval_seconds: early ? row.interval_seconds + 5 : row.interval_seconds,
      })
      .where('id', '=', row.id)
      .execute()
    if (early)
      throw oauthError(
        'slow_down',
        `Polled faster than every ${row.interval_seconds} s; wait ${row.interval_seconds + 5} s`,
      )
    throw oauthError('authorization_pending', 'The request has not been approved yet')
  }
  return deps.db.transaction().execute(async (trx) => {
    const claimed = await trx
      .updateTable('oauth_device_request')
      .set({ status: 'issued', last_polled_at: isoAt(deps) })
      .where('id', '=', row.id)
      .where('status', '=', 'approved')
      .executeTakeFirst()
    if (Number(claimed.numUpdatedRows) === 0) throw oauthError('invalid_grant', 'The device_code was already exchanged')
    const member = await membershipOf({ ...deps, db: trx } as Deps, row.user_id!, row.org_id!)
    // The member approved, then left the organization before the client collected its token.
    if (!member || member.memberId !== row.member_id)
      throw oauthError('access_denied', 'The approving member is no longer in the organization')
    const issued = await issueGrant(
      deps,
      trx,
      { ...member, userId: row.user_id! },
      client,
      storedScopes(row.scope),
      row.resource,
    )
    await trx.updateTable('oauth_device_request').set({ grant_id: issued.grantId }).where('id', '=', row.id).execute()
    return issued.response
  })
}

/** Outcome of a user-code lookup, so the caller can count failures against the throttle. */
export type DeviceLookup = { row: OAuthDeviceRequestTable; userCode: string } | { missing: true }

/** Finds the pending, unexpired request of a typed user code. */
export async function findPendingDeviceRequest(deps: Deps, typed: string): Promise<DeviceLookup> {
  const code = normalizeUserCode(typed)
  if (!code) return { missing: true }
  const row = await deps.db
    .selectFrom('oauth_device_request')
    .selectAll()
    .where('user_code_hash', '=', hashToken(code))
    .executeTakeFirst()
  if (row?.status !== 'pending' || Date.parse(row.expires_at) <= deps.now()) return { missing: true }
  return { row, userCode: formatUserCode(code) }
}

/** What the console shows before the person decides. */
export function describeDeviceRequest(row: OAuthDeviceRequestTable, userCode: string): DeviceRequestView {
  const client = BUILT_IN_CLIENTS.get(row.client_id)
  return {
    userCode,
    client: { id: row.client_id, name: client?.name ?? row.client_id },
    scopes: storedScopes(row.scope).map((scope) => ({ scope, description: SCOPE_DESCRIPTIONS[scope] })),
    resource: row.resource,
    expiresAt: row.expires_at,
  }
}

/**
 * Approves a pending request for the signed-in user in `orgId` (one of theirs; 404 otherwise, as
 * for every organization the caller does not belong to). The tokens are issued when the client
 * next polls, bound to this organization and member.
 */
export async function approveDeviceRequest(
  deps: Deps,
  row: OAuthDeviceRequestTable,
  userId: string,
  orgId: string | null,
): Promise<Membership> {
  if (!orgId)
    throw controlPlaneError(
      'no_organization',
      'You are not a member of any organization; create one or accept an invitation',
    )
  const member = await membershipOf(deps, userId, orgId)
  if (!member) throw controlPlaneError('organization_not_found', 'Organization not found')
  await deps.db.transaction().execute(async (trx) => {
    const updated = await trx
      .updateTable('oauth_device_request')
      .set({
        status: 'approved',
        org_id: member.orgId,
        member_id: member.memberId,
        user_id: userId,
        decided_at: isoAt(deps),
      })
      .where('id', '=', row.id)
      .where('status', '=', 'pending')
      .executeTakeFirst()
    if (Number(updated.numUpdatedRows) === 0)
      throw controlPlaneError('oauth_device_request_not_found', 'No pending sign-in request with this code')
    await recordAudit(
      deps,
      trx,
      { ...grantActor({ ...member, userId }), credential: 'session' },
      'oauth_device.approved',
      { type: 'oauth_device_request', id: row.id },
      { clientId: row.client_id, scope: row.scope },
    )
  })
  return member
}

/** Denies a pending request; the client's next poll gets `access_denied`. */
export async function denyDeviceRequest(deps: Deps, row: OAuthDeviceRequestTable, userId: string): Promise<void> {
  const updated = await deps.db
    .updateTable('oauth_device_request')
    .set({ status: 'denied', user_id: userId, decided_at: isoAt(deps) })
    .where('id', '=', row.id)
    .where('status', '=', 'pending')
    .executeTakeFirst()
  if (Number(updated.numUpdatedRows) === 0)
    throw controlPlaneError('oauth_device_request_not_found', 'No pending sign-in request with this code')
}
