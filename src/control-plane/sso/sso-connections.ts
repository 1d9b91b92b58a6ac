/**
 * An organization's OpenID Connect connection (issue 33 §1), managed by its owner: saved only
 * after the issuer's discovery document checks out, its client secret sealed with the secret box
 * (bound to the organization id) and never returned, its email domains claimed for this
 * organization alone (a domain routes to one provider).
 * @module
 */
import { readAdmissionPolicy } from '../admission/admission-policy.ts'
import type { Actor } from '../actor.ts'
import { recordAudit } from '../admin/audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { AssignableRole } from '../policy.ts'
import type { Db } from '../schema.ts'
import { acceptableProviderUrl, discover, fromProvider, type ProviderMetadata } from './oidc-client.ts'
import type { SsoConnectionTable } from './sso-tables.ts'

/** A connection as the owner reads it. */
export interface SsoConnectionView {
  slug: string
  displayName: string
  issuer: string
  clientId: string
  hasClientSecret: boolean
  allowedDomains: string[]
  defaultRole: AssignableRole
  defaultTeamId: string | null
  redirectUri: string
  startUrl: string
  createdAt: string
  updatedAt: string
}

/** What an owner saves. */
export interface SsoConnectionInput {
  slug: string
  displayName: string
  issuer: string
  clientId: string
  clientSecret?: string
  allowedDomains: string[]
  defaultRole: AssignableRole
  defaultTeamId: string | null
}

/** The URI to register with the provider for a connection. */
export function redirectUriOf(base: string, slug: string): string {
  return `${base}/v1/sso/${slug}/callback`
}

/** The view of a stored connection; `base` is the server's public URL. */
export function toConnectionView(row: SsoConnectionTable, base: string): SsoConnectionView {
  return {
    slug: row.slug,
    displayName: row.display_name,
    issuer: row.issuer,
    clientId: row.client_id,
    hasClientSecret: row.client_secret_sealed !== '',
    allowedDomains: JSON.parse(row.allowed_domains) as string[],
    defaultRole: row.default_role as AssignableRole,
    defaultTeamId: row.default_team_id,
    redirectUri: redirectUriOf(base, row.slug),
    startUrl: `${base}/v1/sso/${row.slug}/start`,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

const invalid = (path: string, message: string) =>
  controlPlaneError('validation_failed', `${path} ${message}`, { details: { issues: [{ path, message }] } })

const notConfigured = () => controlPlaneError('sso_not_configured', 'The organization has no single sign-on connection')

/** The organization's connection row, or null. */
export function findConnection(db: Db, orgId: string): Promise<SsoConnectionTable | undefined> {
  return db.selectFrom('sso_connection').selectAll().where('org_id', '=', orgId).executeTakeFirst()
}

/** The connection a sign-in URL names, or 404 `sso_connection_not_found`. */
export async function connectionBySlug(db: Db, slug: string): Promise<SsoConnectionTable> {
  const row = await db.selectFrom('sso_connection').selectAll().where('slug', '=', slug).executeTakeFirst()
  if (!row) throw controlPlaneError('sso_connection_not_found', 'No single sign-on connection has that name')
  return row
}

/** The organization's connection for its owner; 404 `sso_not_configured` when there is none. */
export async function getConnection(deps: Deps, orgId: string, base: string): Promise<SsoConnectionView> {
  const row = await findConnection(deps.db, orgId)
  if (!row) throw notConfigured()
  return toConnectionView(row, base)
}

/**
 * Creates or replaces the connection. The issuer's discovery is fetched and checked first (outside
 * the transaction, bounded), so a typo in the issuer is a 422 now rather than a failed sign-in later.
 */
export async function putConnection(
  deps: Deps,
  actor: Actor,
  input: SsoConnectionInput,
  base: string,
  discovered: (issuer: string) => Promise<ProviderMetadata> = discover,
): Promise<{ view: SsoConnectionView; created: boolean }> {
  const issuer = input.issuer
  if (!acceptableProviderUrl(issuer)) throw invalid('issuer', 'must be an https URL (or http on localhost)')
  await fromProvider(() => discovered(issuer))
  const now = isoAt(deps)
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const existing = await findConnection(trx, actor.orgId)
      if (!existing && input.clientSecret === undefined)
        throw invalid('clientSecret', 'required when creating the connection')
      if (existing && existing.issuer !== issuer && (await readAdmissionPolicy(trx, actor.orgId)).requireSso)
        throw controlPlaneError(
          'sso_connection_in_use',
          'Members must sign in with SSO: switch that rule off before changing the issuer',
        )
      if (input.defaultTeamId) {
        const team = await trx
          .selectFrom('team')
          .select('id')
          .where('id', '=', input.defaultTeamId)
          .where('org_id', '=', actor.orgId)
          .executeTakeFirst()
        if (!team) throw controlPlaneError('team_not_found', 'Team not found')
      }
      const sealed =
        input.clientSecret !== undefined
          ? deps.secrets.seal(input.clientSecret, actor.orgId)
          : (existing?.client_secret_sealed ?? '')
      const row: SsoConnectionTable = {
        org_id: actor.orgId,
        slug: input.slug,
        display_name: input.displayName,
        issuer,
        client_id: input.clientId,
        client_secret_sealed: sealed,
        allowed_domains: JSON.stringify(input.allowedDomains),
        default_role: input.defaultRole,
        default_team_id: input.defaultTeamId,
        created_at: existing?.created_at ?? now,
        updated_at: now,
      }
      if (existing) await trx.updateTable('sso_connection').set(row).where('org_id', '=', actor.orgId).execute()
      else await trx.insertInto('sso_connection').values(row).execute()
      await trx.deleteFrom('sso_domain').where('org_id', '=', actor.orgId).execute()
      for (const domain of input.allowedDomains) {
        const taken = await trx
          .selectFrom('sso_domain')
          .select('org_id')
          .where('domain', '=', domain)
          .executeTakeFirst()
        if (taken)
          throw controlPlaneError('sso_domain_taken', `Another organization signs in ${domain} with its provider`, {
            details: { domain },
          })
        await trx.insertInto('sso_domain').values({ domain, org_id: actor.orgId }).execute()
      }
      await recordAudit(
        deps,
        trx,
        actor,
        'sso_connection.updated',
        { type: 'sso_connection', id: actor.orgId },
        { issuer, secretChanged: input.clientSecret !== undefined },
      )
      return { view: toConnectionView(row, base), created: !existing }
    })
  } catch (error) {
    if (isUniqueViolation(error))
      throw controlPlaneError('sso_slug_taken', 'Another organization uses that slug for its sign-in URLs')
    throw error
  }
}

/** Removes the connection; refused while members must sign in with SSO (they would be locked out). */
export async function deleteConnection(deps: Deps, actor: Actor): Promise<void> {
  await deps.db.transaction().execute(async (trx) => {
    if (!(await findConnection(trx, actor.orgId))) throw notConfigured()
    if ((await readAdmissionPolicy(trx, actor.orgId)).requireSso)
      throw controlPlaneError(
        'sso_connection_in_use',
        'Members must sign in with SSO: switch that rule off before removing the connection',
      )
    await trx.deleteFrom('sso_domain').where('org_id', '=', actor.orgId).execute()
    await trx.deleteFrom('sso_connection').where('org_id', '=', actor.orgId).execute()
    await recordAudit(deps, trx, actor, 'sso_connection.deleted', { type: 'sso_connection', id: actor.orgId })
  })
}

/** Which sign-in applies to an email, by its domain alone (so it never reveals an account). */
export async function resolveSignIn(deps: Deps, email: string, base: string): Promise<SignInResolution> {
  const at = email.lastIndexOf('@')
  const domain = email
    .slice(at + 1)
    .trim()
    .toLowerCase()
  const row = await deps.db
    .selectFrom('sso_domain as d')
    .innerJoin('sso_connection as c', 'c.org_id', 'd.org_id')
    .leftJoin('org_admission_policy as p', 'p.org_id', 'd.org_id')
    .select(['c.slug', 'c.display_name', 'p.require_sso'])
    .where('d.domain', '=', domain)
    .executeTakeFirst()
  if (!row) return { method: 'password', requireSso: false }
  const signInPath = `/v1/sso/${row.slug}/start`
  const requireSso = Number(row.require_sso ?? 0) === 1
  return {
    method: 'sso',
    provider: row.display_name,
    startUrl: `${base}${signInPath}`,
    passwordAllowed: !requireSso,
    requireSso,
    organizationSlug: row.slug,
    signInPath,
    signInUrl: `${base}${signInPath}`,
  }
}

/**
 * Which sign-in applies to an email. `requireSso`, `organizationSlug`, `signInPath` and `signInUrl`
 * carry the reference's field names, so its clients read our answer as they read its own.
 */
export type SignInResolution =
  | { method: 'password'; requireSso: false }
  | {
      method: 'sso'
      provider: string
      startUrl: string
      passwordAllowed: boolean
      requireSso: boolean
      organizationSlug: string
      signInPath: string
      signInUrl: string
    }
