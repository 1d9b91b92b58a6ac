/**
 * Changing an organization's admission policy (owner): a compare-and-set on its version, so two
 * owners editing at once cannot silently overwrite each other (409 `admission_policy_conflict`).
 *
 * Switching "members must sign in with SSO" on ends, in the same transaction, every session of the
 * organization's members that its provider did not sign in, their API keys in this organization
 * and their OAuth grants there (all were obtained without the provider).
 *
 * Lock-out guard: the rule can be switched on only when the organization has an SSO connection and
 * the owner doing it is in a session that connection signed in, which proves the provider works
 * end to end and that the owner can get back in. While the rule is on, the connection cannot be
 * removed or pointed at another issuer (see sso-connections.ts).
 * @module
 */
import type { Actor } from '../actor.ts'
import { disableMemberKeys } from '../admin/api-keys.ts'
import { recordAudit } from '../admin/audit.ts'
import { controlPlaneError } from '../control-plane-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import { revokeMemberOAuthTokens } from '../oauth/oauth-token-lists.ts'
import { readAdmissionPolicy, type AdmissionPolicy, type WayIn } from './admission-policy.ts'

/** What an owner writes. */
export interface AdmissionPolicyInput {
  expectedVersion: number
  waysIn: Record<WayIn, boolean>
  allowedDomains: string[]
  requireSso: boolean
}

/** What switching the SSO rule on ended. */
export interface SsoSwitchEffects {
  sessionsEnded: number
  apiKeysDisabled: number
  oauthGrantsRevoked: number
}

/** Writes the policy when `expectedVersion` is the stored one; returns the new policy. */
export async function putAdmissionPolicy(
  deps: Deps,
  actor: Actor,
  callerSsoOrgId: string | null,
  input: AdmissionPolicyInput,
): Promise<AdmissionPolicy> {
  return deps.db.transaction().execute(async (trx) => {
    const current = await readAdmissionPolicy(trx, actor.orgId)
    if (current.version !== input.expectedVersion)
      throw controlPlaneError(
        'admission_policy_conflict',
        'The policy changed since you read it; read it again and reapply your change',
        { details: { expectedVersion: input.expectedVersion, currentVersion: current.version } },
      )
    const switchingOn = input.requireSso && !current.requireSso
    if (switchingOn) {
      const connection = await trx
        .selectFrom('sso_connection')
        .select('org_id')
        .where('org_id', '=', actor.orgId)
        .executeTakeFirst()
      if (!connection || callerSsoOrgId !== actor.orgId)
        throw controlPlaneError(
          'sso_not_proven',
          'Sign in with the organization’s SSO connection first: requiring SSO is allowed only from a session it signed in, so you cannot lock yourself out',
          { details: { hasConnection: Boolean(connection), signedInWithSso: callerSsoOrgId === actor.orgId } },
        )
    }
    const version = current.version + 1
    const row = {
      org_id: actor.orgId,
      version,
      allow_invitation: input.waysIn.invitation ? 1 : 0,
      allow_sso_jit: input.waysIn.ssoJustInTime ? 1 : 0,
      allow_scim: input.waysIn.scim ? 1 : 0,
      allowed_domains: JSON.stringify(input.allowedDomains),
      require_sso: input.requireSso ? 1 : 0,
      updated_by_member_id: actor.memberId,
      updated_at: isoAt(deps),
    }
    if (current.version === 0) await trx.insertInto('org_admission_policy').values(row).execute()
    else {
      const written = await trx
        .updateTable('org_admission_policy')
        .set(row)
        .where('org_id', '=', actor.orgId)
        .where('version', '=', current.version)
        .executeTakeFirst()
      // Another writer got in between the read and this write (SQLite serializes, PostgreSQL may not).
      if (Number(written.numUpdatedRows) !== 1)
        throw controlPlaneError('admission_policy_conflict', 'The policy changed since you read it; read it again', {
          details: { expectedVersion: input.expectedVersion },
        })
    }
    let effects: SsoSwitchEffects | null = null
    if (switchingOn) {
      const members = await trx
        .selectFrom('member')
        .select(['id', 'user_id'])
        .where('org_id', '=', actor.orgId)
        .execute()
      effects = { sessionsEnded: 0, apiKeysDisabled: 0, oauthGrantsRevoked: 0 }
      for (const member of members) {
        const ended = await trx
          .deleteFrom('user_session')
          .where('user_id', '=', member.user_id)
          .where((eb) => eb.or([eb('sso_org_id', 'is', null), eb('sso_org_id', '!=', actor.orgId)]))
          .executeTakeFirst()
        effects.sessionsEnded += Number(ended.numDeletedRows)
        effects.apiKeysDisabled += await disableMemberKeys(deps, trx, actor, member.id, 'sso_required')
        effects.oauthGrantsRevoked += await revokeMemberOAuthTokens(deps, trx, actor, member.id, 'sso_required')
      }
    }
    await recordAudit(
      deps,
      trx,
      actor,
      'admission_policy.updated',
      { type: 'admission_policy', id: actor.orgId },
      {
        version,
        requireSso: input.requireSso,
        invitation: input.waysIn.invitation,
        ssoJustInTime: input.waysIn.ssoJustInTime,
        scim: input.waysIn.scim,
        domains: input.allowedDomains.length,
        ...(effects ?? {}),
      },
    )
    return readAdmissionPolicy(trx, actor.orgId)
  })
}
