/**
 * Sign-in sessions. The bearer token is shown to the client once and stored only as its SHA-256,
 * so a leaked database file holds no usable session. Sessions expire after a configured lifetime
 * and slide forward while in use, writing at most once per refresh interval rather than on every
 * request.
 * @module
 */
import type { Kysely } from 'kysely'
import { newId } from '../../core/ids.ts'
import { andThen, type MaybePromise } from '../../core/maybe-promise.ts'
import { generateToken, hashToken } from '../../core/secrets.ts'
import { isoAt, type Deps } from '../deps.ts'
import { preparedQuery } from '../prepared-query.ts'
import type { ControlPlaneDb, Db } from '../schema.ts'
import { toUserView, type UserView } from './users-view.ts'

/** Prefix of session tokens; API keys use `svc_`, so the two can never be confused. */
export const SESSION_TOKEN_PREFIX = 'sst_'

/** A session as returned to its owner at sign-in; the token appears only here. */
export interface IssuedSession {
  id: string
  token: string
  expiresAt: string
}

/** A resolved session. */
export interface ActiveSession {
  id: string
  activeOrgId: string | null
  /** The organization whose provider signed this session in; null for a password session. */
  ssoOrgId?: string | null
  expiresAt: string
  user: UserView
}

/** The caller's membership in the organization a session lookup asked about. */
export interface SessionMembership {
  orgId: string
  orgName: string
  memberId: string
  role: string
  /**
   * True when the organization requires sign-in with its provider and this session was not signed
   * in by it: the membership is then refused (403 `sso_required`) for this organization.
   */
  ssoRequired: boolean
}

/** A resolved session with the membership the lookup asked about. */
export type ResolvedSession = ActiveSession & { membership: SessionMembership | null }

const sessionLookup = preparedQuery((db: Kysely<ControlPlaneDb>, tokenHash: string, orgId: string | null) =>
  db
    .selectFrom('user_session as s')
    .innerJoin('app_user as u', 'u.id', 's.user_id')
    .leftJoin('member as m', (join) =>
      join
        .onRef('m.user_id', '=', 's.user_id')
        .on((eb) => eb('m.org_id', '=', eb.fn.coalesce(eb.val(orgId), eb.ref('s.active_org_id')))),
    )
    .leftJoin('organization as o', 'o.id', 'm.org_id')
    .leftJoin('org_admission_policy as p', 'p.org_id', 'm.org_id')
    .select([
      's.sso_org_id',
      'p.require_sso',
      's.id as session_id',
      's.active_org_id',
      's.expires_at',
      's.refreshed_at',
      'u.id',
      'u.email',
      'u.name',
      'u.created_at',
      'm.id as member_id',
      'm.role',
      'o.id as org_id',
      'o.name as org_name',
    ])
    .where('s.token_hash', '=', tokenHash),
)

type SessionRow = Awaited<ReturnType<typeof sessionLookup>>[number]

/** How often a session in use has its expiry pushed forward: a day, or the lifetime if shorter. */
function refreshIntervalMs(ttlMs: number): number {
  return Math.min(24 * 3600_000, Math.floor(ttlMs / 2))
}

/** Issues a new session for a user. */
export async function createSession(
  deps: Deps,
  db: Db,
  userId: string,
  activeOrgId: string | null,
  ssoOrgId: string | null = null,
): Promise<IssuedSession> {
  const token = generateToken(SESSION_TOKEN_PREFIX)
  const id = newId('ses')
  const now = isoAt(deps)
  const expiresAt = isoAt(deps, deps.settings.sessionTtlMs)
  await db
    .insertInto('user_session')
    .values({
      id,
      user_id: userId,
      token_hash: hashToken(token),
      active_org_id: activeOrgId,
      created_at: now,
      refreshed_at: now,
      expires_at: expiresAt,
      sso_org_id: ssoOrgId,
    })
    .execute()
  return { id, token, expiresAt }
}

/**
 * The live session for a bearer token, refreshed when due; null when unknown or expired.
 * In the same query it looks up the caller's membership in `orgId` (or, when null, in the
 * session's active organization), because every authenticated request needs both and one
 * round trip is cheaper than two.
 */
export function resolveSession(
  deps: Deps,
  token: string,
  orgId: string | null = null,
): MaybePromise<ResolvedSession | null> {
  return andThen(sessionLookup(deps.db, hashToken(token), orgId), ([row]) => (row ? liveSession(deps, row) : null))
}

/** A session as found, refreshed or removed by its expiry; synchronous unless it writes. */
function liveSession(deps: Deps, row: SessionRow): MaybePromise<ResolvedSession | null> {
  const membership =
    row.member_id && row.org_id
      ? {
          orgId: row.org_id,
          orgName: row.org_name ?? '',
          memberId: row.member_id,
          role: row.role ?? 'member',
          ssoRequired: Number(row.require_sso ?? 0) === 1 && row.sso_org_id !== row.org_id,
        }
      : null
  const now = deps.now()
  if (Date.parse(row.expires_at) <= now) {
    return deps.db
      .deleteFrom('user_session')
      .where('id', '=', row.session_id)
      .execute()
      .then(() => null)
  }
  const session = (expiresAt: string) => ({
    id: row.session_id,
    activeOrgId: row.active_org_id,
    ssoOrgId: row.sso_org_id,
    expiresAt,
    user: toUserView(row),
    membership,
  })
  if (now - Date.parse(row.refreshed_at) < refreshIntervalMs(deps.settings.sessionTtlMs)) return session(row.expires_at)
  const expiresAt = isoAt(deps, deps.settings.sessionTtlMs)
  return deps.db
    .updateTable('user_session')
    .set({ refreshed_at: isoAt(deps), expires_at: expiresAt })
    .where('id', '=', row.session_id)
    .execute()
    .then(() => session(expiresAt))
}

/** Ends a session (sign-out). */
export async function deleteSession(deps: Deps, sessionId: string): Promise<void> {
  await deps.db.deleteFrom('user_session').where('id', '=', sessionId).execute()
}

/** Records which organization a session acts in by default. */
export async function setActiveOrg(db: Db, sessionId: string, orgId: string | null): Promise<void> {
  await db.updateTable('user_session').set({ active_org_id: orgId }).where('id', '=', sessionId).execute()
}
