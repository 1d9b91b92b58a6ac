/**
 * Audit events for administrative actions: actor, action, target ids and time. Callers pass only
 * small typed facts (a role before and after, a count); request bodies, tokens, keys and
 * passwords are never recorded.
 * @module
 */
import { newId } from '../../core/ids.ts'
import type { AudienceEntry } from '../events/change-audience.ts'
import { appendChange, isFeedAction } from '../events/change-feed.ts'
import { announceDelivery } from '../delivery/delivery-events.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { Actor } from '../actor.ts'
import type { ControlPlaneDb, Db } from '../schema.ts'
import { insertRows, type RowInsert } from '../../storage/row-inserts.ts'
import { currentRequestAudit } from '../audit/request-audit.ts'

export type { Actor }

/** Audit actions recorded by this surface. */
export type AuditAction =
  | 'organization.created'
  | 'organization.updated'
  | 'member.joined'
  | 'member.role_changed'
  | 'member.ownership_transferred'
  | 'member.removed'
  | 'invitation.created'
  | 'invitation.canceled'
  | 'invitation.accepted'
  | 'team.created'
  | 'team.updated'
  | 'team.deleted'
  | 'team.member_added'
  | 'team.member_removed'
  | 'api_key.created'
  | 'api_key.revoked'
  | 'api_key.disabled'
  | 'job.retried'
  | 'worker.created'
  | 'worker.deleted'
  | 'worker.tokens_issued'
  | 'worker.tokens_revoked'
  | 'worker.delivery_updated'
  | 'connector_account.created'
  | 'connector_account.updated'
  | 'connector_account.deleted'
  | 'connector_instance.created'
  | 'connector_instance.updated'
  | 'connector_instance.deleted'
  | 'connector_target.created'
  | 'connector_target.updated'
  | 'connector_target.deleted'
  | 'connector_mapping.created'
  | 'connector_mapping.updated'
  | 'connector_mapping.deleted'
  | 'connector_sync.requested'
  | 'connector_sync.retried'
  | 'connector_discovery.requested'
  | 'config_object.created'
  | 'config_object.version_added'
  | 'config_object.archived'
  | 'config_object.deleted'
  | 'config_object.restored'
  | 'access.granted'
  | 'access.revoked'
  | 'plugin.created'
  | 'plugin.updated'
  | 'plugin.archived'
  | 'plugin.restored'
  | 'plugin.deleted'
  | 'plugin.member_added'
  | 'plugin.member_removed'
  | 'plugin.assigned'
  | 'plugin.unassigned'
  | 'marketplace.created'
  | 'marketplace.updated'
  | 'marketplace.archived'
  | 'marketplace.restored'
  | 'marketplace.deleted'
  | 'marketplace.plugin_added'
  | 'marketplace.plugin_removed'
  | 'skill_hub.created'
  | 'skill_hub.updated'
  | 'skill_hub.deleted'
  | 'skill_hub.skill_added'
  | 'skill_hub.skill_removed'
  | 'skill_hub.assigned'
  | 'skill_hub.unassigned'
  | 'llm_provider.created'
  | 'llm_provider.updated'
  | 'llm_provider.deleted'
  | 'llm_provider.credential_read'
  | 'oauth_device.approved'
  | 'oauth_authorization.approved'
  | 'oauth_token.issued'
  | 'oauth_token.revoked'
  | 'sso_connection.updated'
  | 'sso_connection.deleted'
  | 'admission_policy.updated'
  | 'scim_token.created'
  | 'scim_token.revoked'
  | 'scim_user.provisioned'
  | 'scim_user.updated'
  | 'scim_user.deactivated'
  | 'scim_user.deleted'
  | 'session.revoked'

/** Non-secret facts about an action. Values are short strings, numbers or booleans only. */
export type AuditData = Record<string, string | number | boolean | null>

/**
 * Appends one audit event; call inside the transaction that made the change. `alongside` are the
 * change's own rows, written with the audit row (and the feed's row) in one statement where the
 * engine allows it (`storage/row-inserts.ts`). When the action is also a feed change, `audience`
 * replaces its kind's audience (`events/change-audience.ts`): pass it when only the caller knows
 * who is concerned (the principal of a grant it just deleted).
 */
export async function recordAudit(
  deps: Deps,
  db: Db,
  actor: Actor,
  action: AuditAction,
  target: { type: string; id: string },
  data?: AuditData,
  alongside: readonly RowInsert[] = [],
  audience?: readonly AudienceEntry[],
): Promise<void> {
  // The request's audit learns that this request has its event, so it adds no generic one.
  const request = currentRequestAudit()
  request?.noteHandlerEvent(db.isTransaction)
  const audit: RowInsert = {
    table: 'audit_event',
    row: {
      id: newId('aev'),
      org_id: actor.orgId,
      action,
      actor_user_id: actor.userId,
      // A SCIM token is no member (its Actor carries the token id there, which never names one).
      actor_member_id: actor.credential === 'scim' ? null : actor.memberId,
      credential_kind: actor.credential,
      api_key_id: actor.apiKeyId,
      target_type: target.type,
      target_id: target.id,
      data: data ? JSON.stringify(data) : null,
      created_at: isoAt(deps),
      origin: actor.origin ?? request?.facts.origin ?? 'api',
      outcome: 'success',
      error_code: null,
      request_id: request?.facts.requestId ?? null,
      route: request?.facts.route ?? null,
    } satisfies ControlPlaneDb['audit_event'],
  }
  // Every audited change that others may need to react to is also in the change feed, written in
  // the same transaction, so the feed can never claim a change that was rolled back.
  if (isFeedAction(action)) {
    await appendChange(deps, db, { orgId: actor.orgId, kind: action, subject: target, data, audience }, [
      ...alongside,
      audit,
    ])
  } else await insertRows(db, [...alongside, audit])
  await announceDelivery(deps, db, actor.orgId, action, target, data)
}
