/**
 * The storage layer of config objects, in plain data and without access checks or audit, for
 * callers that already decided the write is allowed: the API layer (`config-objects.ts`) after
 * checking grants, and connector sync (issue 8) inside its own job transaction. Everything here
 * takes an open transaction so a sync can create or version many objects atomically.
 *
 * History is append-only: versions are numbered per object under a unique constraint and never
 * updated; appending with a `baseVersionId` that is not the latest is 409 `version_conflict`, so
 * two editors (or an editor and a sync) cannot silently overwrite each other.
 * @module
 */
import { RetryableApiError } from '../../storage/serializable-transactions.ts'
import { newId } from '../../core/ids.ts'
import { insertRows, type RowInsert } from '../../storage/row-inserts.ts'
import { isUniqueViolation } from '../db-errors.ts'
import { isoAt, type Deps } from '../deps.ts'
import type { ControlPlaneDb } from '../schema.ts'
import type { Db } from '../schema.ts'
import { DEFAULT_SKILL_LIMITS, type StoredFile, type WireFileIn } from '../../opencode/skill-bundle.ts'
import { type NormalizedSource, normalizeSource, type ObjectType, type VersionInput } from './config-source.ts'
import { searchTerms } from './search-terms.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** How objects enter the catalog. `connector` objects are created only by connector sync. */
export const SOURCE_MODES = ['cloud', 'import', 'connector'] as const
/** A source mode. */
export type SourceMode = (typeof SOURCE_MODES)[number]
/** How a version was made. */
export const CREATED_VIA = ['cloud', 'import', 'connector', 'system'] as const
/** A version's origin. */
export type CreatedVia = (typeof CREATED_VIA)[number]
/** Config object states. */
export const OBJECT_STATES = ['active', 'archived', 'deleted'] as const
/** A config object state. */
export type ObjectState = (typeof OBJECT_STATES)[number]

/** Who writes: the organization, and the member behind it (null for system work such as sync). */
export interface Writer {
  orgId: string
  memberId: string | null
}

/** A new object: its metadata and first version. */
export interface NewConfigObject {
  type: ObjectType
  title: string
  description?: string | null
  input: VersionInput
}

/** Provenance of an object or version. */
export interface Provenance {
  sourceMode: SourceMode
  /** The connector instance that owns the object (connector mode). */
  connectorInstanceId?: string | null
  /** The sync event that produced the version. */
  connectorSyncEventId?: string | null
  /** e.g. a git commit; or the editor's reason for a manual version. */
  sourceRevisionRef?: string | null
}

/** Options for {@link appendVersionIn}. */
export interface AppendOptions {
  /** When given, must be the latest version's id (409 `version_conflict` otherwise). */
  baseVersionId?: string
  createdVia: CreatedVia
  connectorSyncEventId?: string | null
  sourceRevisionRef?: string | null
  /**
   * A skill input without `files` keeps the latest version's files (the edit API's rule, so a
   * client that only changes SKILL.md never drops them); `files: []` still removes them. Off for
   * imports and connector syncs, whose input is always the whole folder.
   */
  keepOmittedFiles?: boolean
}

/** Stored row of an object. */
export type ConfigObjectRow = ControlPlaneDb['config_object']

/** The search-term rows of an object: one per term of its text (`storage/row-inserts.ts`). */
function termRows(orgId: string, objectId: string, text: string): RowInsert {
  return {
    table: 'config_object_term',
    shared: { org_id: orgId, config_object_id: objectId },
    each: { column: 'term', values: searchTerms(text) },
  }
}

async function replaceTerms(trx: Db, orgId: string, objectId: string, text: string): Promise<void> {
  await trx.deleteFrom('config_object_term').where('config_object_id', '=', objectId).execute()
  await insertRows(trx, [termRows(orgId, objectId, text)])
}

/** The row of a version: what it holds (the input and its normalized form) and where it came from. */
function versionRow(
  writer: Writer,
  at: { id: string; objectId: string; number: number; at: string },
  input: VersionInput,
  source: NormalizedSource,
  origin: Pick<AppendOptions, 'createdVia' | 'connectorSyncEventId' | 'sourceRevisionRef'>,
): ControlPlaneDb['config_object_version'] {
  return {
    id: at.id,
    org_id: writer.orgId,
    config_object_id: at.objectId,
    number: at.number,
    raw_source_text: input.rawSourceText ?? null,
    normalized_payload: JSON.stringify(source.payload),
    files: source.files,
    content_hash: source.contentHash,
    created_via: origin.createdVia,
    created_by_member_id: writer.memberId,
    connector_sync_event_id: origin.connectorSyncEventId ?? null,
    source_revision_ref: origin.sourceRevisionRef ?? null,
    created_at: at.at,
  }
}

/** A new object, ready to insert: its row, and every row it needs (object, version, terms). */
export interface PlannedConfigObject {
  id: string
  versionId: string
  object: ConfigObjectRow
  rows: RowInsert[]
}

/**
 * Validates the source (422) and lays out a new object with its first version (number 1) and its
 * search terms, without touching the database: so a create parses before its transaction opens,
 * and writes everything in one statement where the engine allows (`recordAudit`'s `alongside`).
 * A new object has no terms to delete; not deleting also keeps a create from reading the index
 * range where concurrent creates insert (a SERIALIZABLE conflict on PostgreSQL).
 */
export async function planConfigObject(
  deps: Deps,
  writer: Writer,
  input: NewConfigObject,
  provenance: Provenance,
): Promise<PlannedConfigObject> {
  const source = await normalizeSource(input.type, input.input, input.title, {
    ...DEFAULT_SKILL_LIMITS,
    ...deps.settings.skills,
  })
  const id = newId('cob')
  const versionId = newId('cov')
  const now = isoAt(deps)
  const object: ConfigObjectRow = {
    id,
    org_id: writer.orgId,
    object_type: input.type,
    source_mode: provenance.sourceMode,
    title: input.title,
    description: input.description ?? null,
    name: source.name,
    status: 'active',
    connector_instance_id: provenance.connectorInstanceId ?? null,
    created_by_member_id: writer.memberId,
    latest_version_id: versionId,
    version_count: 1,
    latest_created_via: provenance.sourceMode,
    latest_created_by_member_id: writer.memberId,
    latest_source_revision_ref: provenance.sourceRevisionRef ?? null,
    latest_created_at: now,
    created_at: now,
    updated_at: now,
    archived_at: null,
    deleted_at: null,
  }
  const version = versionRow(writer, { id: versionId, objectId: id, number: 1, at: now }, input.input, source, {
    createdVia: provenance.sourceMode,
    connectorSyncEventId: provenance.connectorSyncEventId,
    sourceRevisionRef: provenance.sourceRevisionRef,
  })
  const terms = termRows(writer.orgId, id, `${input.title} ${input.description ?? ''} ${source.searchText}`)
  return {
    id,
    versionId,
    object,
    rows: [{ table: 'config_object', row: object }, { table: 'config_object_version', row: version }, terms],
  }
}

/** Inserts an object with its first version (number 1); returns both ids. Validates the source (422). */
export async function insertConfigObject(
  deps: Deps,
  trx: Db,
  writer: Writer,
  input: NewConfigObject,
  provenance: Provenance,
): Promise<{ id: string; versionId: string }> {
  const planned = await planConfigObject(deps, writer, input, provenance)
  await insertRows(trx, planned.rows)
  return { id: planned.id, versionId: planned.versionId }
}

/** The object row in the organization, or null. */
export function findConfigObject(db: Db, orgId: string, id: string): Promise<ConfigObjectRow | undefined> {
  return db.selectFrom('config_object').selectAll().where('id', '=', id).where('org_id', '=', orgId).executeTakeFirst()
}

/** Objects a connector instance owns, oldest first (for sync reconciliation). */
export function findConfigObjectsByConnector(
  db: Db,
  orgId: string,
  connectorInstanceId: string,
): Promise<ConfigObjectRow[]> {
  return db
    .selectFrom('config_object')
    .selectAll()
    .where('org_id', '=', orgId)
    .where('connector_instance_id', '=', connectorInstanceId)
    .orderBy('id')
    .execute()
}

/**
 * A concurrent append took the next number. The transaction runs again and then sees the winner
 * (an append with a base answers `version_conflict` with the real latest id there; one without a
 * base simply appends after it); if it keeps losing, this is the answer: contention, not a
 * version conflict, so 409 `write_conflict` with Retry-After as every other retried write.
 */
function concurrentAppend(): RetryableApiError {
  return new RetryableApiError(
    409,
    'write_conflict',
    'Too many concurrent changes to the same data; retry the request',
    {
      headers: { 'retry-after': '1' },
    },
  )
}

/**
 * Appends a version to an object of the writer's organization and makes it the latest. 404 when
 * the object is not in the organization; 409 `config_object_deleted` for a deleted object; 409
 * `version_conflict` (with the latest id) when `baseVersionId` is stale; 409 `write_conflict` when
 * concurrent appends kept winning through every retry.
 * A skill equal to the latest version (same bundle hash) adds nothing: the latest id is returned.
 */
export async function appendVersionIn(
  deps: Deps,
  trx: Db,
  writer: Writer,
  objectId: string,
  given: VersionInput,
  options: AppendOptions,
): Promise<string> {
  const object = await findConfigObject(trx, writer.orgId, objectId)
  if (!object) throw controlPlaneError('config_object_not_found', 'Config object not found')
  if (object.status === 'deleted')
    throw controlPlaneError(
      'config_object_deleted',
      'The config object is deleted; restore it before adding versions',
      {
        details: {
          status: object.status,
        },
      },
    )
  if (options.baseVersionId !== undefined && options.baseVersionId !== object.latest_version_id) {
    throw controlPlaneError(
      'version_conflict',
      'The base version is not the latest; re-read the latest version and apply your change to it',
      { details: { latestVersionId: object.latest_version_id } },
    )
  }
  const input =
    options.keepOmittedFiles && object.object_type === 'skill' && given.files === undefined
      ? { ...given, files: await latestFiles(trx, object.latest_version_id) }
      : given
  const source = await normalizeSource(object.object_type as ObjectType, input, object.title, {
    ...DEFAULT_SKILL_LIMITS,
    ...deps.settings.skills,
  })
  if (source.contentHash !== null && object.latest_version_id) {
    const latest = await trx
      .selectFrom('config_object_version')
      .select('content_hash')
      .where('id', '=', object.latest_version_id)
      .executeTakeFirst()
    // Versions are deduplicated by content: a skill whose SKILL.md and files are all unchanged adds
    // no version, and the latest one stands for it.
    if (latest?.content_hash === source.contentHash) return object.latest_version_id
  }
  const versionId = newId('cov')
  const now = isoAt(deps)
  try {
    await trx
      .insertInto('config_object_version')
      .values(
        versionRow(
          writer,
          { id: versionId, objectId, number: object.version_count + 1, at: now },
          input,
          source,
          options,
        ),
      )
      .execute()
  } catch (error) {
    // A concurrent append took this number: run the transaction again, which then answers with the
    // winner as the latest version (or, if it keeps losing, this).
    if (isUniqueViolation(error)) throw concurrentAppend()
    throw error
  }
  // Compare-and-set on the count: a writer that read the same state loses here even on a database
  // without the single-writer lock.
  const updated = await trx
    .updateTable('config_object')
    .set({
      latest_version_id: versionId,
      version_count: object.version_count + 1,
      latest_created_via: options.createdVia,
      latest_created_by_member_id: writer.memberId,
      latest_source_revision_ref: options.sourceRevisionRef ?? null,
      latest_created_at: now,
      name: source.name,
      updated_at: now,
    })
    .where('id', '=', objectId)
    .where('version_count', '=', object.version_count)
    .executeTakeFirst()
  if (Number(updated.numUpdatedRows) !== 1) throw concurrentAppend()
  await replaceTerms(trx, writer.orgId, objectId, `${object.title} ${object.description ?? ''} ${source.searchText}`)
  return versionId
}

/** The latest version's files as a client would send them (stored files are already that shape). */
async function latestFiles(trx: Db, latestVersionId: string | null): Promise<WireFileIn[]> {
  if (!latestVersionId) return []
  const row = await trx
    .selectFrom('config_object_version')
    .select('files')
    .where('id', '=', latestVersionId)
    .executeTakeFirst()
  return row?.files ? (JSON.parse(row.files) as StoredFile[]) : []
}

/** Lifecycle actions and the states each may start from. */
export const LIFECYCLE: Record<'archive' | 'delete' | 'restore', { from: ObjectState[]; to: ObjectState }> = {
  archive: { from: ['active'], to: 'archived' },
  delete: { from: ['active', 'archived'], to: 'deleted' },
  restore: { from: ['archived', 'deleted'], to: 'active' },
}

/** Moves an object through its lifecycle; 409 `invalid_lifecycle_transition` from a state the action does not start from. */
export async function changeLifecycleIn(
  deps: Deps,
  trx: Db,
  orgId: string,
  objectId: string,
  action: keyof typeof LIFECYCLE,
): Promise<ObjectState> {
  const object = await findConfigObject(trx, orgId, objectId)
  if (!object) throw controlPlaneError('config_object_not_found', 'Config object not found')
  const move = LIFECYCLE[action]
  if (!move.from.includes(object.status as ObjectState)) {
    throw controlPlaneError(
      'invalid_lifecycle_transition',
      `Cannot ${action} a config object that is ${object.status}`,
      {
        details: {
          status: object.status,
          action,
          allowedFrom: move.from,
        },
      },
    )
  }
  const now = isoAt(deps)
  await trx
    .updateTable('config_object')
    .set({
      status: move.to,
      updated_at: now,
      archived_at: move.to === 'archived' ? now : null,
      deleted_at: move.to === 'deleted' ? now : null,
    })
    .where('id', '=', objectId)
    .execute()
  return move.to
}
