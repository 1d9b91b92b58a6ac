/**
 * Zip upload of skill folders (`POST /v1/config-objects/import`): each folder of the archive
 * becomes a new skill object or a new version of the visible skill with that name, all in one
 * transaction, so an archive with one bad folder imports nothing. A preview runs the very same
 * work and rolls it back, so it answers exactly what the import would do.
 * @module
 */
import { ApiError } from '../../core/errors.ts'
import { DEFAULT_SKILL_LIMITS, type SkillLimits, toWireIn } from '../../opencode/skill-bundle.ts'
import { DEFAULT_ZIP_LIMITS, readSkillZip, type ZipLimits } from '../../opencode/skill-zip.ts'
import { recordAudit, type Actor } from '../admin/audit.ts'
import type { Deps } from '../deps.ts'
import { requireRole, grantCreator } from './access-grants.ts'
import { visibleCondition } from './visibility-sql.ts'
import { normalizeSource, type VersionInput } from './config-source.ts'
import { appendVersionIn, insertConfigObject } from './config-store.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** What the import did (or, in a preview, would do) with one skill folder. */
export interface SkillImportItem {
  name: string
  /** The folder in the archive ('' for a SKILL.md at its root). */
  folder: string
  action: 'create' | 'update' | 'unchanged'
  /** The object; null for a create in a preview (nothing was stored). */
  configObjectId: string | null
  /** The version that holds the folder; null for a create in a preview. */
  versionId: string | null
  versionNumber: number
  /** Files beside SKILL.md. */
  fileCount: number
  bytes: number
}

/** The import's answer. */
export interface SkillImportResult {
  preview: boolean
  items: SkillImportItem[]
}

/** The limits in force: the configured ones over the defaults. */
export function importLimits(deps: Deps): SkillLimits & ZipLimits {
  return { ...DEFAULT_SKILL_LIMITS, ...DEFAULT_ZIP_LIMITS, ...deps.settings.skills }
}

class PreviewRollback extends Error {
  constructor(readonly result: SkillImportResult) {
    super('preview rollback')
  }
}

/**
 * Imports the skill folders of `zip` (see `readSkillZip` for what is refused). A folder's name
 * must equal its SKILL.md's `name` (422 `zip_skill_name_mismatch`); two folders of one name are
 * 422 `zip_duplicate_skill`; a name shared by several visible skills is 409
 * `skill_name_ambiguous`; updating a skill needs the editor role on it (403/404 otherwise).
 */
export async function importSkillZip(
  deps: Deps,
  actor: Actor,
  zip: Uint8Array,
  options: { preview: boolean },
): Promise<SkillImportResult> {
  const limits = importLimits(deps)
  const folders = readSkillZip(zip, limits)
  const prepared: Array<{
    folder: (typeof folders)[number]
    input: VersionInput
    source: Awaited<ReturnType<typeof normalizeSource>>
  }> = []
  const names = new Set<string>()
  for (const folder of folders) {
    const input = { rawSourceText: folder.skillMd, files: folder.files.map(toWireIn) }
    const source = await normalizeSource('skill', input, folder.folderName ?? 'skill', limits).catch((error) => {
      if (error instanceof ApiError)
        throw new ApiError(error.status, error.code, `${folder.folder || 'SKILL.md'}: ${error.message}`, {
          details: { ...(error.details as object), folder: folder.folder },
        })
      throw error
    })
    if (folder.folderName !== null && folder.folderName !== source.name)
      throw controlPlaneError(
        'zip_skill_name_mismatch',
        `Folder ${folder.folder} holds skill ${source.name}; a skill's folder must carry its name`,
        { details: { folder: folder.folder, name: source.name } },
      )
    if (names.has(source.name))
      throw controlPlaneError('zip_duplicate_skill', `The archive holds skill ${source.name} twice`, {
        details: { name: source.name },
      })
    names.add(source.name)
    prepared.push({ folder, input, source })
  }
  try {
    return await deps.db.transaction().execute(async (trx) => {
      const items: SkillImportItem[] = []
      for (const { folder, input, source } of prepared) {
        const bytes = Buffer.byteLength(folder.skillMd) + folder.files.reduce((n, f) => n + f.bytes.byteLength, 0)
        const existing = await trx
          .selectFrom('config_object as co')
          .select(['co.id', 'co.latest_version_id', 'co.version_count'])
          .where('co.org_id', '=', actor.orgId)
          .where('co.object_type', '=', 'skill')
          .where('co.name', '=', source.name)
          .where('co.status', '!=', 'deleted')
          .where(visibleCondition(trx, actor, 'config_object', 'co.id'))
          .orderBy('co.id')
          .execute()
        if (existing.length > 1)
          throw controlPlaneError(
            'skill_name_ambiguous',
            `${existing.length} skills are named ${source.name}; add the version to one of them through its versions route`,
            { details: { name: source.name, configObjectIds: existing.map((e) => e.id) } },
          )
        const base = { name: source.name, folder: folder.folder, fileCount: folder.files.length, bytes }
        const current = existing[0]
        if (current) {
          await requireRole(trx, actor, 'config_object', current.id, 'editor')
          const versionId = await appendVersionIn(deps, trx, actor, current.id, input, { createdVia: 'import' })
          const unchanged = versionId === current.latest_version_id
          if (!unchanged)
            await recordAudit(
              deps,
              trx,
              actor,
              'config_object.version_added',
              { type: 'config_object', id: current.id },
              { versionId, via: 'zip_import' },
            )
          items.push({
            ...base,
            action: unchanged ? 'unchanged' : 'update',
            configObjectId: current.id,
            versionId,
            versionNumber: unchanged ? current.version_count : current.version_count + 1,
          })
          continue
        }
        const created = await insertConfigObject(
          deps,
          trx,
          { orgId: actor.orgId, memberId: actor.memberId },
          { type: 'skill', title: source.name, input },
          { sourceMode: 'import' },
        )
        await grantCreator(deps, trx, actor, 'config_object', created.id)
        await recordAudit(
          deps,
          trx,
          actor,
          'config_object.created',
          { type: 'config_object', id: created.id },
          { objectType: 'skill', versionId: created.versionId, via: 'zip_import' },
        )
        items.push({
          ...base,
          action: 'create',
          configObjectId: options.preview ? null : created.id,
          versionId: options.preview ? null : created.versionId,
          versionNumber: 1,
        })
      }
      // A preview did all the work to know the answer; throwing rolls every write back.
      if (options.preview) throw new PreviewRollback({ preview: true, items })
      return { preview: false, items }
    })
  } catch (error) {
    if (error instanceof PreviewRollback) return error.result
    throw error
  }
}
