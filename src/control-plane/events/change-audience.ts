/**
 * Who may see each change of the feed, decided when the change is written and stored with it
 * (`change_audience`: one row per principal, indexed by `(org_id, principal, seq)`), so a member's
 * feed is a few index ranges, one per principal they are, and never a check of each event.
 *
 * A principal is a key: `org` (every member), `member:<id>`, `team:<id>` (members of the team
 * when the feed is read), `perm:<permission>` (members whose role and credential hold it when
 * read). Owners and admins see every event whole and read the feed without the audience. Each
 * row says whether the principal sees the whole event or a bare `visibility.changed` (`hint`),
 * the signal that something they cannot see changed what they can see; when a member is several
 * principals of one event, the whole event wins.
 *
 * Adding a kind: add a line to {@link FEED_ACTIONS} naming its audience with the helpers below
 * (`seers('plugin')`: whoever can see the subject resource now; `holders('workers.read')`, which
 * also makes readers look that permission up; a function of the change for anything else), or pass `audience` to `appendChange` /
 * `recordAudit` at the call site, which then replaces the line's audience (use it when the
 * audience is known only there: the principal of a grant just deleted, a delivery's scope). A new
 * kind of principal needs its key here ({@link principalKey}) and in {@link readerKeys}.
 * @module
 */
import type { Actor } from '../actor.ts'
import type { ResourceType } from '../catalog/grant-roles.ts'
import { resourcePrincipalsSql } from '../catalog/visibility-sql.ts'
import { allows, type Permission } from '../policy.ts'
import type { Db } from '../schema.ts'
import type { RowInsert } from '../../storage/row-inserts.ts'

/** Someone an event is for. */
export type Audience =
  /** Every member of the organization. */
  | { org: true }
  | { memberId: string }
  /** The team's members at the time the feed is read. */
  | { teamId: string }
  /** Members whose role (and credential) hold the permission when the feed is read. */
  | { permission: Permission }
  /** Whoever can see the resource when the change is written (grants, containers, assignments). */
  | { resource: ResourceType; id: string }
  /** A Worker's runtime (its activity token reads only the events addressed to it). */
  | { workerId: string }

/** One audience of an event, seeing it whole or (`hint`) as a bare `visibility.changed`. */
export interface AudienceEntry {
  to: Audience
  hint?: boolean
}

/** A change as a writer describes it (`appendChange`). */
export interface NewChange {
  orgId: string
  kind: string
  subject?: { type: string; id: string } | null
  data?: unknown
  /** Replaces the kind's audience from {@link FEED_ACTIONS}. */
  audience?: readonly AudienceEntry[]
}

type Rule = (change: NewChange) => readonly AudienceEntry[]

/** Whoever can see the change's subject, a `type` resource, sees the whole event. */
const seers =
  (type: ResourceType): Rule =>
  (change) =>
    change.subject ? [{ to: { resource: type, id: change.subject.id } }] : []

/** Permissions some feed kind is addressed by; a reader holds a `perm:` key for each they have. */
const FEED_PERMISSIONS = new Set<Permission>()

/** Members holding `permission` see the whole event (readers then look the permission's range up). */
const holders = (permission: Permission): Rule => {
  FEED_PERMISSIONS.add(permission)
  return () => [{ to: { permission } }]
}

/** The member a change names (the subject, or a field of its data) learns that their reach changed. */
const hintToMember =
  (field?: string): Rule =>
  (change) => {
    const data = (change.data ?? {}) as Record<string, unknown>
    const id = field ? data[field] : change.subject?.id
    return typeof id === 'string' ? [{ to: { memberId: id }, hint: true }] : []
  }

/** Only owners and admins (the call site passes the audience when someone else is concerned). */
const adminsOnly: Rule = () => []

/**
 * Audit actions that are also changes in the feed, and who sees them besides owners and admins.
 * Changes to what a container holds reach whoever sees the container (their reach changed and
 * the whole event says how); grants and unassignments name their principal at the call site.
 */
export const FEED_ACTIONS: Record<string, Rule> = {
  'config_object.created': seers('config_object'),
  'config_object.version_added': seers('config_object'),
  'config_object.archived': seers('config_object'),
  'config_object.restored': seers('config_object'),
  'config_object.deleted': seers('config_object'),
  'plugin.created': seers('plugin'),
  'plugin.updated': seers('plugin'),
  'plugin.archived': seers('plugin'),
  'plugin.restored': seers('plugin'),
  'plugin.deleted': seers('plugin'),
  'plugin.member_added': seers('plugin'),
  'plugin.member_removed': seers('plugin'),
  'plugin.assigned': seers('plugin'),
  'plugin.unassigned': seers('plugin'),
  'marketplace.created': seers('marketplace'),
  'marketplace.updated': seers('marketplace'),
  'marketplace.archived': seers('marketplace'),
  'marketplace.restored': seers('marketplace'),
  'marketplace.deleted': seers('marketplace'),
  'marketplace.plugin_added': seers('marketplace'),
  'marketplace.plugin_removed': seers('marketplace'),
  'skill_hub.created': seers('skill_hub'),
  'skill_hub.updated': seers('skill_hub'),
  'skill_hub.deleted': seers('skill_hub'),
  'skill_hub.skill_added': seers('skill_hub'),
  'skill_hub.skill_removed': seers('skill_hub'),
  'skill_hub.assigned': seers('skill_hub'),
  'skill_hub.unassigned': seers('skill_hub'),
  'access.granted': adminsOnly,
  'access.revoked': adminsOnly,
  'team.member_added': hintToMember('memberId'),
  'team.member_removed': hintToMember('memberId'),
  'member.removed': hintToMember(),
  'member.role_changed': hintToMember(),
  'worker.created': holders('workers.read'),
  'worker.deleted': holders('workers.read'),
  'worker.tokens_issued': holders('workers.read'),
  'worker.tokens_revoked': holders('workers.read'),
  'worker.state_changed': holders('workers.read'),
  'worker.delivery_updated': holders('workers.read'),
  'connector_sync.requested': holders('connectors.read'),
  'connector_sync.retried': holders('connectors.read'),
  'connector_sync.state_changed': seers('connector_instance'),
}

/** The key of a principal audience (`access_grant.principal_key` form for members, teams, org). */
export function principalKey(to: Exclude<Audience, { resource: ResourceType }>): string {
  if ('org' in to) return 'org'
  if ('memberId' in to) return `member:${to.memberId}`
  if ('teamId' in to) return `team:${to.teamId}`
  if ('workerId' in to) return `worker:${to.workerId}`
  return `perm:${to.permission}`
}

/** The audience for a grant or assignment's `principal_key` (`member:<id>`, `team:<id>`, `org`). */
export function audienceOfKey(key: string): Audience {
  if (key.startsWith('member:')) return { memberId: key.slice('member:'.length) }
  if (key.startsWith('team:')) return { teamId: key.slice('team:'.length) }
  return { org: true }
}

/** One stored audience row of an event. */
export interface AudienceRow {
  principal: string
  hint: 0 | 1
}

/**
 * The audience rows of a change, resolved in the writer's transaction. A resource audience is
 * read from the database, plus the grants written `alongside` the change (on PostgreSQL they are
 * in the same statement, so not yet visible to a read); a resource created alongside has no
 * other principal yet, so it costs no read.
 */
export async function resolveAudience(
  db: Db,
  change: NewChange,
  alongside: readonly RowInsert[],
): Promise<AudienceRow[]> {
  const entries = change.audience ?? FEED_ACTIONS[change.kind]?.(change) ?? []
  const rows = new Map<string, 0 | 1>()
  const add = (principal: string, hint: boolean) => {
    const had = rows.get(principal)
    rows.set(principal, had === 0 || !hint ? 0 : 1)
  }
  for (const entry of entries) {
    const to = entry.to
    if (!('resource' in to)) {
      // Readers only look up the permissions a `holders(…)` line names: any other would be unread.
      if ('permission' in to && !FEED_PERMISSIONS.has(to.permission))
        throw new Error(`change feed: no FEED_ACTIONS line is addressed to ${to.permission}; add one with holders()`)
      add(principalKey(to), entry.hint === true)
      continue
    }
    let created = false
    for (const insert of alongside) {
      if (!('row' in insert)) continue
      const row = insert.row as Record<string, unknown>
      if (insert.table === to.resource && row.id === to.id) created = true
      if (insert.table === 'access_grant' && row.resource_type === to.resource && row.resource_id === to.id)
        add(String(row.principal_key), entry.hint === true)
    }
    if (created) continue
    const found = await resourcePrincipalsSql(to.resource, to.id).execute(db)
    for (const { k } of found.rows) add(k, entry.hint === true)
  }
  return [...rows].map(([principal, hint]) => ({ principal, hint }))
}

/**
 * The principal keys a non-admin reader is: everyone, themselves, their teams (read by the caller
 * with the feed's head, in one statement), and the feed permissions their role and credential hold.
 */
export function readerKeys(actor: Actor, teamIds: readonly string[]): string[] {
  return [
    'org',
    `member:${actor.memberId}`,
    ...teamIds.map((id) => `team:${id}`),
    ...[...FEED_PERMISSIONS]
      .filter((p) => actor.credential !== 'scim' && allows(p, actor.role, actor.credential))
      .map((p) => `perm:${p}`),
  ]
}
