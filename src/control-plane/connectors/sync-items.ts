/**
 * What one sync imports: every source entry a mapping selects, as an item to write or a failure
 * with its reason (the member who started the sync cannot edit the mapping's plugin, a file over
 * the size limit, a skill folder over the skill limits), and the paths still present in the source
 * (the rest were removed from it).
 * @module
 */
import { ApiError } from '../../core/errors.ts'
import type { SkillLimits } from '../../opencode/skill-bundle.ts'
import type { Actor } from '../admin/audit.ts'
import { requireRole } from '../catalog/access-grants.ts'
import type { ObjectType } from '../catalog/config-source.ts'
import type { AsyncContext } from '../jobs/async-context.ts'
import type { CredentialKind, Role } from '../policy.ts'
import type { SyncFailure } from './connector-sync.ts'
import type { ConnectorMappingTable, ConnectorSyncEventTable } from './connector-tables.ts'
import { skillFolderEntries, compileSelector } from './source-items.ts'
import type { SourceEntry } from './sources/source.ts'

/** One source entry to import through one mapping. */
export interface SyncItem {
  mappingId: string
  pluginId: string | null
  objectType: ObjectType
  entry: SourceEntry
  /** Skills: the other files of the SKILL.md's folder; null for other items. */
  folder: SourceEntry[] | null
}

/**
 * Why a skill folder cannot be imported, judged from the listed sizes before anything is read,
 * with the same reasons the API gives; null when it fits the limits.
 */
function folderProblem(entry: SourceEntry, folder: SourceEntry[], limits: SkillLimits): SyncFailure | null {
  if (folder.length + 1 > limits.maxFiles)
    return {
      path: entry.path,
      reason: 'skill_too_many_files',
      message: `The skill folder has ${folder.length + 1} files; at most ${limits.maxFiles} are allowed`,
    }
  const big = folder.find((f) => f.size > limits.maxFileBytes)
  if (big)
    return {
      path: entry.path,
      reason: 'skill_file_too_large',
      message: `${big.path} is ${big.size} bytes; at most ${limits.maxFileBytes} are allowed per file`,
    }
  const total = folder.reduce((n, f) => n + f.size, entry.size)
  if (total > limits.maxBytes)
    return {
      path: entry.path,
      reason: 'skill_too_large',
      message: `The skill folder is ${total} bytes; at most ${limits.maxBytes} are allowed`,
    }
  return null
}

/**
 * Ids of the mappings into a plugin that the member who triggered the event cannot edit (now):
 * the same `requireRole(…, 'plugin', …, 'editor')` as the API, with the member's current role;
 * a member who left cannot edit anything.
 */
export async function deniedMappings(
  ctx: AsyncContext,
  event: ConnectorSyncEventTable,
  mappings: ConnectorMappingTable[],
): Promise<Set<string>> {
  const denied = new Set<string>()
  const pluginIds = [...new Set(mappings.map((m) => m.plugin_id).filter((id): id is string => id !== null))]
  if (pluginIds.length === 0) return denied
  const member = event.triggered_by_member_id
    ? await ctx.deps.db
        .selectFrom('member')
        .select(['id', 'user_id', 'role'])
        .where('id', '=', event.triggered_by_member_id)
        .where('org_id', '=', event.org_id)
        .executeTakeFirst()
    : undefined
  const actor: Actor | null = member
    ? {
        orgId: event.org_id,
        userId: member.user_id,
        memberId: member.id,
        role: member.role as Role,
        credential: event.credential_kind as CredentialKind,
        apiKeyId: event.api_key_id,
      }
    : null
  for (const pluginId of pluginIds) {
    let allowed = false
    if (actor) {
      try {
        await requireRole(ctx.deps.db, actor, 'plugin', pluginId, 'editor')
        allowed = true
      } catch (error) {
        if (!(error instanceof ApiError) || error.status >= 500) throw error
      }
    }
    if (!allowed) for (const mapping of mappings) if (mapping.plugin_id === pluginId) denied.add(mapping.id)
  }
  return denied
}

/** The items, failures and present paths of one sync over `entries`. */
export async function selectSyncItems(
  ctx: AsyncContext,
  event: ConnectorSyncEventTable,
  mappings: ConnectorMappingTable[],
  entries: SourceEntry[],
  skillLimits: SkillLimits,
): Promise<{
  items: SyncItem[]
  failures: Map<string, SyncFailure>
  present: Set<string>
  denied: Set<string>
}> {
  const settings = ctx.settings.connectors
  const denied = await deniedMappings(ctx, event, mappings)
  const items: SyncItem[] = []
  const failures = new Map<string, SyncFailure>(
    (event.failures ? (JSON.parse(event.failures) as SyncFailure[]) : []).map((f) => [f.path, f]),
  )
  // Every selected path still in the source, including those that fail; the rest were removed.
  const present = new Set<string>()
  for (const mapping of mappings) {
    const pattern = compileSelector(mapping.selector)
    for (const entry of entries) {
      if (!pattern.test(entry.path)) continue
      present.add(`${mapping.id}\0${entry.path}`)
      if (denied.has(mapping.id)) {
        failures.set(entry.path, {
          path: entry.path,
          reason: 'plugin_access_denied',
          message: `The member who started this sync cannot edit plugin ${mapping.plugin_id}, which mapping ${mapping.id} imports into`,
        })
        continue
      }
      if (entry.size > settings.maxFileBytes) {
        failures.set(entry.path, {
          path: entry.path,
          reason: 'file_too_large',
          message: `${entry.size} bytes is over the ${settings.maxFileBytes}-byte limit`,
        })
        continue
      }
      // A mapping that selects a SKILL.md brings the skill's whole folder, under the skill limits.
      const folder =
        mapping.object_type === 'skill' && /(^|\/)SKILL\.md$/.test(entry.path)
          ? skillFolderEntries(entries, entry.path)
          : null
      const problem = folder && folderProblem(entry, folder, skillLimits)
      if (problem) {
        failures.set(entry.path, problem)
        continue
      }
      items.push({
        mappingId: mapping.id,
        pluginId: mapping.plugin_id,
        objectType: mapping.object_type as ObjectType,
        entry,
        folder,
      })
    }
  }
  return { items, failures, present, denied }
}
