/**
 * Skills (spec §4B rule 5): the typed view of config objects of type `skill` (a SKILL.md,
 * validated at write time), and the skills a caller receives, directly by a grant or through a
 * skill hub assigned to them, each with every path that delivers it.
 * @module
 */
import { type Expression, type ExpressionBuilder, type SqlBool, sql } from 'kysely'
import {
  DEFAULT_SKILL_LIMITS,
  type FileListing,
  fromStored,
  listingOf,
  type StoredFile,
  type WireFileIn,
} from '../../opencode/skill-bundle.ts'
import type { Actor } from '../admin/audit.ts'
import type { Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import { requireRole } from './access-grants.ts'
import { isOrgAdmin } from './grant-roles.ts'
import {
  assignedHubIds,
  grantedIds,
  receivedRowSql,
  receivedIdsSql,
  visibleCondition,
  visibleRowSql,
  visibleIdsSql,
  visibleSql,
} from './visibility-sql.ts'
import { preparedQuery } from '../prepared-query.ts'
import type { Db } from '../schema.ts'
import { writeConfigObject } from './config-objects.ts'
import { normalizeSource } from './config-source.ts'
import type { ObjectState } from './config-store.ts'
import type { ConfigObjectVersionTable } from '../schema.ts'
import { preparedVisiblePage } from './visible-page.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

/** A skill as the API shows it. */
export interface SkillView {
  id: string
  name: string
  description: string
  title: string
  status: ObjectState
  versionId: string
  versionNumber: number
  /** The files of the latest version beside SKILL.md (content in the resolved form), sorted by path. */
  files: FileListing[]
  createdAt: string
  updatedAt: string
}

/** How a received skill reaches the caller. */
export interface SkillPathView {
  via: 'grant' | 'hub'
  hubId: string | null
  hubName: string | null
  principal: 'member' | 'team' | 'organization'
  teamId: string | null
}

/** Skill rows with their latest version (for the description). */
export function skillQuery(db: Db, orgId: string) {
  return db
    .selectFrom('config_object as co')
    .innerJoin('config_object_version as v', 'v.id', 'co.latest_version_id')
    .select([
      'co.id',
      'co.name',
      'co.title',
      'co.status',
      'co.created_at',
      'co.updated_at',
      'v.id as version_id',
      'v.number as version_number',
      'v.normalized_payload',
      'v.files',
    ])
    .where('co.org_id', '=', orgId)
    .where('co.object_type', '=', 'skill')
}

type SkillRow = Awaited<ReturnType<ReturnType<typeof skillQuery>['executeTakeFirstOrThrow']>>

/** Maps a row of {@link skillQuery}. */
export function skillView(row: SkillRow): SkillView {
  const payload = JSON.parse(row.normalized_payload) as { description?: string }
  return {
    id: row.id,
    name: row.name,
    description: payload.description ?? '',
    title: row.title,
    status: row.status as ObjectState,
    versionId: row.version_id,
    versionNumber: row.version_number,
    files: row.files ? fromStored(JSON.parse(row.files) as StoredFile[]).map(listingOf) : [],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  }
}

const skillNotFound = () => controlPlaneError('skill_not_found', 'Skill not found')

/** Visible, non-deleted skills in creation order. */
export function listSkills(
  deps: Deps,
  actor: Actor,
  page: { cursor?: string; limit: number },
): Promise<Page<SkillView>> {
  const query = skillQuery(deps.db, actor.orgId).where('co.status', '!=', 'deleted')
  if (isOrgAdmin(actor)) {
    return keysetPage(query.where(visibleCondition(deps.db, actor, 'config_object', 'co.id')), {
      scope: 'skills',
      cursor: page.cursor,
      limit: page.limit,
      order: [{ column: 'co.id', field: 'id', direction: 'asc' }],
      map: skillView,
    })
  }
  return memberSkillPage(deps.db, '', [actor.orgId, actor.memberId], page)
}

/** A plain member's page of visible skills. */
const memberSkillPage = preparedVisiblePage({
  scope: 'skills',
  column: 'co.id',
  field: 'id',
  map: skillView,
  build: (db, _shape, [orgId, memberId]) => {
    const actor = { orgId: orgId as string, memberId: memberId as string }
    return {
      base: skillQuery(db, actor.orgId).where('co.status', '!=', 'deleted'),
      setCondition: () => visibleSql(actor, 'config_object', sql.ref('co.id')) as unknown as Expression<SqlBool>,
      reachIds: (after) => visibleIdsSql(actor, after),
      rowCondition: visibleRowSql(actor, sql.ref('co.id')),
    }
  },
})

/** One visible skill; 404 `skill_not_found` for other object types too. */
export async function getSkill(deps: Deps, actor: Actor, id: string): Promise<SkillView> {
  const row = await skillQuery(deps.db, actor.orgId).where('co.id', '=', id).executeTakeFirst()
  if (!row) throw skillNotFound()
  try {
    await requireRole(deps.db, actor, 'config_object', id, 'viewer')
  } catch {
    throw skillNotFound()
  }
  return skillView(row)
}

/**
 * Creates a skill from a SKILL.md and the files beside it (422 naming the field when invalid,
 * 413/422 over a limit); the title defaults to the name.
 */
export async function createSkill(
  deps: Deps,
  actor: Actor,
  body: { skillMd: string; title?: string; files?: WireFileIn[] },
): Promise<SkillView> {
  const input = { rawSourceText: body.skillMd, files: body.files }
  const source = await (async () => {
    try {
      return await normalizeSource('skill', input, body.title ?? 'skill', {
        ...DEFAULT_SKILL_LIMITS,
        ...deps.settings.skills,
      })
    } catch (error) {
      // Report the field as the skill route names it.
      const details = (error as { details?: { issues?: Array<{ path: string }> } }).details
      for (const issue of details?.issues ?? []) issue.path = issue.path.replace('input.rawSourceText', 'skillMd')
      throw error
    }
  })()
  const planned = await writeConfigObject(deps, actor, {
    type: 'skill',
    sourceMode: 'cloud',
    title: body.title ?? source.name,
    input,
  })
  // The answer is the rows as written: a read after the commit could fail and turn a skill that
  // was created into an error.
  const object = planned.object
  const version = planned.rows.find((r) => r.table === 'config_object_version' && 'row' in r) as
    | { row: ConfigObjectVersionTable }
    | undefined
  if (!version) throw new Error('a planned object has its first version')
  return skillView({
    id: object.id,
    name: object.name,
    title: object.title,
    status: object.status,
    created_at: object.created_at,
    updated_at: object.updated_at,
    version_id: version.row.id,
    version_number: version.row.number,
    normalized_payload: version.row.normalized_payload,
    files: version.row.files,
  })
}

/** A page of the skills a member receives (a grant on the skill, or a hub assigned to them). */
const receivedSkillPage = preparedVisiblePage({
  scope: 'my-skills',
  column: 'co.id',
  field: 'id',
  map: skillView,
  build: (db, _shape, [orgId, memberId]) => {
    const actor = { orgId: orgId as string, memberId: memberId as string }
    const hubSkills = db
      .selectFrom('skill_hub_skill as shs')
      .select('shs.config_object_id')
      .where('shs.org_id', '=', actor.orgId)
      .where('shs.hub_id', 'in', assignedHubIds(db, actor))
    return {
      base: skillQuery(db, actor.orgId).where('co.status', '=', 'active'),
      setCondition: (eb) =>
        eb.or([eb('co.id', 'in', grantedIds(db, actor, 'config_object')), eb('co.id', 'in', hubSkills)]),
      reachIds: (after) => receivedIdsSql(actor, after),
      rowCondition: receivedRowSql(actor, sql.ref('co.id')),
    }
  },
})

/** The member's grants on a page of skills (`count` ids), compiled once per count. */
const pageGrants = byCount((count) =>
  preparedQuery((db: Db, memberId: string, ...ids: string[]) =>
    db
      .selectFrom('access_grant')
      .select(['resource_id', 'member_id', 'team_id', 'org_wide'])
      .where('resource_type', '=', 'config_object')
      .where('resource_id', 'in', ids.slice(0, count))
      .where((eb) => appliesToMember(eb, '', memberId))
      .orderBy('id'),
  ),
)

/** The hubs assigned to the member that hold a page of skills, compiled once per count. */
const pageHubs = byCount((count) =>
  preparedQuery((db: Db, memberId: string, ...ids: string[]) =>
    db
      .selectFrom('skill_hub_skill as shs')
      .innerJoin('skill_hub as h', 'h.id', 'shs.hub_id')
      .innerJoin('skill_hub_assignment as a', 'a.hub_id', 'h.id')
      .select([
        'shs.config_object_id',
        'h.id as hub_id',
        'h.name as hub_name',
        'a.member_id',
        'a.team_id',
        'a.org_wide',
      ])
      .where('shs.config_object_id', 'in', ids.slice(0, count))
      .where((eb) => appliesToMember(eb, 'a.', memberId))
      .orderBy('a.id'),
  ),
)

/** A grant or assignment row (columns prefixed by `alias`) that applies to the member: theirs, a team's they are in, or org-wide. */
// deno-lint-ignore no-explicit-any
function appliesToMember(eb: ExpressionBuilder<any, any>, alias: '' | 'a.', memberId: string) {
  return eb.or([
    eb(`${alias}member_id`, '=', memberId),
    eb(`${alias}team_id`, 'in', eb.selectFrom('team_member').select('team_id').where('member_id', '=', memberId)),
    eb(`${alias}org_wide`, '=', 1),
  ])
}

/** One function per count, made on first use (a page holds at most the largest limit). */
function byCount<F>(make: (count: number) => F): (count: number) => F {
  const made = new Map<number, F>()
  return (count) => {
    let f = made.get(count)
    if (f === undefined) made.set(count, (f = make(count)))
    return f
  }
}

/** Active skills the caller receives (a grant on the skill, or a hub assigned to them), each with its paths. */
export async function listReceivedSkills(
  deps: Deps,
  actor: Actor,
  page: { cursor?: string; limit: number },
): Promise<Page<{ skill: SkillView; paths: SkillPathView[] }>> {
  // Admins receive skills like anyone else (by grants and hubs), so there is no admin shortcut here.
  const skills = await receivedSkillPage(deps.db, '', [actor.orgId, actor.memberId], page)
  const ids = skills.items.map((s) => s.id)
  if (ids.length === 0) return { items: [], nextCursor: skills.nextCursor }
  const [grants, hubs] = [
    await pageGrants(ids.length)(deps.db, actor.memberId, ...ids),
    await pageHubs(ids.length)(deps.db, actor.memberId, ...ids),
  ]
  const principal = (row: { member_id: string | null; team_id: string | null }) =>
    (row.member_id ? 'member' : row.team_id ? 'team' : 'organization') as SkillPathView['principal']
  return {
    items: skills.items.map((skill) => ({
      skill,
      paths: [
        ...grants
          .filter((g) => g.resource_id === skill.id)
          .map((g) => ({
            via: 'grant' as const,
            hubId: null,
            hubName: null,
            principal: principal(g),
            teamId: g.team_id,
          })),
        ...hubs
          .filter((h) => h.config_object_id === skill.id)
          .map((h) => ({
            via: 'hub' as const,
            hubId: h.hub_id,
            hubName: h.hub_name,
            principal: principal(h),
            teamId: h.team_id,
          })),
      ],
    })),
    nextCursor: skills.nextCursor,
  }
}
