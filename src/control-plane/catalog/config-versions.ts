/**
 * Version history of config objects (append, list, latest, one) and the resolved form a runtime
 * consumes. Versions are immutable; reads never return more than one payload at a time except
 * the paged history, which carries payloads because that is what it is for.
 * @module
 */
import { recordAudit, type Actor } from '../admin/audit.ts'
import type { Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb } from '../schema.ts'
import { encodeWireFile, fromStored, type StoredFile, type WireFileOut } from '../../opencode/skill-bundle.ts'
import { requireRole } from './access-grants.ts'
import type { ObjectType, VersionInput } from './config-source.ts'
import { appendVersionIn, findConfigObject, type CreatedVia } from './config-store.ts'
import { renderForm, type ResolvedFile } from './resolved-form.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A version as the API shows it. */
export interface VersionView {
  id: string
  configObjectId: string
  number: number
  rawSourceText: string | null
  normalizedPayload: Record<string, unknown>
  createdVia: CreatedVia
  createdByMemberId: string | null
  connectorSyncEventId: string | null
  sourceRevisionRef: string | null
  createdAt: string
  /** Skills: the files beside SKILL.md; [] for other types. */
  files: WireFileOut[]
}

/** What a runtime installs for an object. */
export interface ResolvedView {
  configObjectId: string
  type: ObjectType
  name: string
  title: string
  /** The object's description, else the one its source declares (skill, command, agent), else null. */
  description: string | null
  version: { id: string; number: number; createdAt: string }
  normalizedPayload: Record<string, unknown>
  files: ResolvedFile[]
  config: Record<string, unknown> | null
}

type VersionRow = ControlPlaneDb['config_object_version']

function versionView(row: VersionRow): VersionView {
  return {
    id: row.id,
    configObjectId: row.config_object_id,
    number: row.number,
    rawSourceText: row.raw_source_text,
    normalizedPayload: JSON.parse(row.normalized_payload) as Record<string, unknown>,
    createdVia: row.created_via as CreatedVia,
    createdByMemberId: row.created_by_member_id,
    connectorSyncEventId: row.connector_sync_event_id,
    sourceRevisionRef: row.source_revision_ref,
    createdAt: row.created_at,
    files: row.files ? fromStored(JSON.parse(row.files) as StoredFile[]).map(encodeWireFile) : [],
  }
}

const versionNotFound = () => controlPlaneError('config_object_version_not_found', 'Version not found')

/**
 * Appends a version (editor); 409 `version_conflict` when `baseVersionId` is not the latest. A
 * skill equal to the latest version (SKILL.md and every file) adds none and returns the latest.
 * A skill input without `files` keeps the latest version's files; `files: []` removes them.
 */
export async function addVersion(
  deps: Deps,
  actor: Actor,
  objectId: string,
  body: { input: VersionInput; baseVersionId?: string; reason?: string },
): Promise<VersionView> {
  // The answer is read inside the transaction: a query after the commit could fail (a lost
  // connection) and turn a stored version into an error a client would retry.
  const row = await deps.db.transaction().execute(async (trx) => {
    await requireRole(trx, actor, 'config_object', objectId, 'editor')
    const latest = (await findConfigObject(trx, actor.orgId, objectId))?.latest_version_id
    const id = await appendVersionIn(
      deps,
      trx,
      { orgId: actor.orgId, memberId: actor.memberId },
      objectId,
      body.input,
      {
        baseVersionId: body.baseVersionId,
        createdVia: 'cloud',
        sourceRevisionRef: body.reason ?? null,
        keepOmittedFiles: true,
      },
    )
    // An unchanged skill added nothing (the latest version stands for it): nothing to audit.
    if (id !== latest)
      await recordAudit(
        deps,
        trx,
        actor,
        'config_object.version_added',
        { type: 'config_object', id: objectId },
        { versionId: id },
      )
    return trx.selectFrom('config_object_version').selectAll().where('id', '=', id).executeTakeFirstOrThrow()
  })
  return versionView(row)
}

/** The object's versions, newest first. */
export async function listVersions(
  deps: Deps,
  actor: Actor,
  objectId: string,
  page: { cursor?: string; limit: number },
): Promise<Page<VersionView>> {
  await requireRole(deps.db, actor, 'config_object', objectId, 'viewer')
  const query = deps.db.selectFrom('config_object_version').selectAll().where('config_object_id', '=', objectId)
  return keysetPage(query, {
    scope: `versions:${objectId}`,
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'desc' }],
    map: versionView,
  })
}

/** One version of the object. */
export async function getVersion(deps: Deps, actor: Actor, objectId: string, versionId: string): Promise<VersionView> {
  await requireRole(deps.db, actor, 'config_object', objectId, 'viewer')
  const row = await deps.db
    .selectFrom('config_object_version')
    .selectAll()
    .where('id', '=', versionId)
    .where('config_object_id', '=', objectId)
    .executeTakeFirst()
  if (!row) throw versionNotFound()
  return versionView(row)
}

/** The latest version. */
export async function getLatestVersion(deps: Deps, actor: Actor, objectId: string): Promise<VersionView> {
  await requireRole(deps.db, actor, 'config_object', objectId, 'viewer')
  const object = await findConfigObject(deps.db, actor.orgId, objectId)
  const row = object?.latest_version_id
    ? await deps.db
        .selectFrom('config_object_version')
        .selectAll()
        .where('id', '=', object.latest_version_id)
        .executeTakeFirst()
    : undefined
  if (!row) throw versionNotFound()
  return versionView(row)
}

/** Renders an object's latest version for a runtime (no access check; callers check). */
export async function resolveObjectIn(deps: Deps, orgId: string, objectId: string): Promise<ResolvedView> {
  const object = await findConfigObject(deps.db, orgId, objectId)
  if (!object) throw controlPlaneError('config_object_not_found', 'Config object not found')
  if (object.status !== 'active') {
    throw controlPlaneError(
      'config_object_not_active',
      `The config object is ${object.status}; only active objects resolve (restore it first)`,
      { details: { status: object.status } },
    )
  }
  const version = await deps.db
    .selectFrom('config_object_version')
    .selectAll()
    .where('id', '=', object.latest_version_id!)
    .executeTakeFirstOrThrow()
  const payload = JSON.parse(version.normalized_payload) as Record<string, unknown>
  const form = await renderForm(object.object_type as ObjectType, payload, version.raw_source_text, version.files)
  return {
    configObjectId: object.id,
    type: object.object_type as ObjectType,
    name: object.name,
    title: object.title,
    // A skill made through POST /v1/config-objects usually carries its description only in SKILL.md,
    // so the object's own (optional) description is null; the resolved form must not drop it.
    description: object.description ?? (typeof payload.description === 'string' ? payload.description : null),
    version: { id: version.id, number: version.number, createdAt: version.created_at },
    normalizedPayload: payload,
    files: form.files,
    config: form.config,
  }
}

/** The resolved form of a visible object; 409 `config_object_not_active` when archived or deleted. */
export async function getResolved(deps: Deps, actor: Actor, objectId: string): Promise<ResolvedView> {
  await requireRole(deps.db, actor, 'config_object', objectId, 'viewer')
  return resolveObjectIn(deps, actor.orgId, objectId)
}
