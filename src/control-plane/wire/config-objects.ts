/**
 * Wire schemas of config objects, versions, resolved forms and access grants.
 * @module
 */
import * as v from 'valibot'
import { GRANT_ROLES, RESOURCE_TYPES } from '../catalog/grant-roles.ts'
import { OBJECT_TYPES } from '../catalog/config-source.ts'
import { CREATED_VIA, OBJECT_STATES, SOURCE_MODES } from '../catalog/config-store.ts'
import { SkillFileOut, SkillFilesIn } from '../../opencode/skill-wire.ts'
import { pageQuery } from '../pagination.ts'
import { idOf, itemOf, nameField, pageOf, Timestamp } from './common.ts'

const MIB = 1024 * 1024

/** A config object type. */
export const ObjectTypeField = v.picklist(OBJECT_TYPES, `must be one of ${OBJECT_TYPES.join(', ')}`)
/** Free text description. */
export const DescriptionField = v.nullable(v.pipe(v.string(), v.maxLength(4000, 'must be at most 4000 characters')))

/** A version's content: exactly one of raw source text or a normalized payload (each ≤ 1 MiB). */
export const VersionInputSchema = v.pipe(
  v.strictObject({
    rawSourceText: v.optional(
      v.pipe(
        v.string(),
        v.maxLength(MIB, 'must be at most 1 MiB'),
        v.description(
          'The source as written: a SKILL.md, a command or agent markdown file, MCP server JSON, a tool or hook module, context markdown, or custom JSON',
        ),
      ),
    ),
    normalizedPayload: v.optional(
      v.pipe(
        v.record(v.string(), v.unknown()),
        v.check((p) => JSON.stringify(p).length <= MIB, 'must be at most 1 MiB as JSON'),
        v.description('The already-normalized payload for the type (see the resolved form)'),
      ),
    ),
    files: v.optional(
      v.pipe(
        SkillFilesIn,
        v.description(
          'Skills only: the files beside SKILL.md (`{path, contentBase64 | content, executable?, sha256?}`), replacing the previous version’s files as a whole. On `POST /v1/config-objects/{id}/versions`, omitting `files` keeps the latest version’s files unchanged (so a client that edits only SKILL.md never drops them) and `files: []` removes them all. Under the server limits (default 200 files, 5 MiB per file, 20 MiB per skill; 413 `skill_file_too_large` / `skill_too_large`, 422 `skill_too_many_files`, each naming the limit and path). The whole JSON body is capped at 8 MiB: upload larger skills as a zip.',
        ),
      ),
    ),
  }),
  v.check(
    (input) => (input.rawSourceText === undefined) !== (input.normalizedPayload === undefined),
    'give exactly one of rawSourceText or normalizedPayload',
  ),
)

/** `POST /v1/config-objects` body. */
export const CreateConfigObjectBody = v.strictObject({
  type: ObjectTypeField,
  sourceMode: v.picklist(
    ['cloud', 'import'],
    'must be cloud or import (connector objects come only from connector sync)',
  ),
  title: nameField(255),
  description: v.optional(DescriptionField),
  input: VersionInputSchema,
  pluginIds: v.optional(v.pipe(v.array(idOf('plg')), v.maxLength(100))),
})

/** `POST /v1/config-objects/:id/versions` body. */
export const AddVersionBody = v.strictObject({
  input: VersionInputSchema,
  baseVersionId: v.optional(
    v.pipe(
      idOf('cov'),
      v.description('The version this edit starts from; 409 version_conflict if it is no longer the latest'),
    ),
  ),
  reason: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(255))),
})

const VersionSummary = v.strictObject({
  id: idOf('cov'),
  number: v.number(),
  createdVia: v.picklist(CREATED_VIA),
  createdByMemberId: v.nullable(idOf('mem')),
  sourceRevisionRef: v.nullable(v.string()),
  createdAt: Timestamp,
})

/** A config object with a summary of its latest version. */
export const ConfigObject = v.pipe(
  v.strictObject({
    id: idOf('cob'),
    type: ObjectTypeField,
    sourceMode: v.picklist(SOURCE_MODES),
    title: v.string(),
    description: v.nullable(v.string()),
    name: v.pipe(v.string(), v.description('File-safe name used by the resolved files')),
    status: v.picklist(OBJECT_STATES),
    connectorInstanceId: v.nullable(v.string()),
    createdByMemberId: v.nullable(idOf('mem')),
    versionCount: v.number(),
    latestVersion: v.nullable(VersionSummary),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    archivedAt: v.nullable(Timestamp),
    deletedAt: v.nullable(Timestamp),
  }),
  v.title('ConfigObject'),
)
/** A page of config objects. */
export const ConfigObjectPage = pageOf(ConfigObject, 'ConfigObjectPage')
/** `{item: ConfigObject}`. */
export const ConfigObjectItem = itemOf(ConfigObject, 'ConfigObjectItem')

/** One immutable version. */
export const ConfigObjectVersion = v.pipe(
  v.strictObject({
    id: idOf('cov'),
    configObjectId: idOf('cob'),
    number: v.number(),
    rawSourceText: v.nullable(v.string()),
    normalizedPayload: v.record(v.string(), v.unknown()),
    createdVia: v.picklist(CREATED_VIA),
    createdByMemberId: v.nullable(idOf('mem')),
    connectorSyncEventId: v.nullable(v.string()),
    sourceRevisionRef: v.nullable(v.string()),
    createdAt: Timestamp,
    files: v.pipe(
      v.array(SkillFileOut),
      v.description(
        "Skills: the version's files beside SKILL.md, path order (`content` for UTF-8 text, else `contentBase64`); [] otherwise",
      ),
    ),
  }),
  v.title('ConfigObjectVersion'),
)
/** A page of versions. */
export const ConfigObjectVersionPage = pageOf(ConfigObjectVersion, 'ConfigObjectVersionPage')
/** `{item: ConfigObjectVersion}`. */
export const ConfigObjectVersionItem = itemOf(ConfigObjectVersion, 'ConfigObjectVersionItem')

/** A file the runtime writes. */
export const ResolvedFile = v.pipe(
  v.strictObject({
    path: v.string(),
    content: v.pipe(v.string(), v.description('The text (encoding utf8) or the bytes in base64 (encoding base64)')),
    encoding: v.picklist(['utf8', 'base64']),
    executable: v.pipe(v.boolean(), v.description('Write with mode 0755 (else 0644)')),
    sha256: v.string(),
  }),
  v.title('ResolvedFile'),
)
/** What a runtime consumes for one object. */
export const ResolvedConfigObject = v.pipe(
  v.strictObject({
    configObjectId: idOf('cob'),
    type: ObjectTypeField,
    name: v.string(),
    title: v.string(),
    description: v.pipe(
      v.nullable(v.string()),
      v.description(
        "The object's description; when it has none, the description its source declares (a skill's SKILL.md, a command's or agent's frontmatter); else null",
      ),
    ),
    version: v.strictObject({ id: idOf('cov'), number: v.number(), createdAt: Timestamp }),
    normalizedPayload: v.record(v.string(), v.unknown()),
    files: v.pipe(
      v.array(ResolvedFile),
      v.description(
        'Files in OpenCode project layout, e.g. .opencode/skills/<name>/SKILL.md followed by every other file of the skill folder',
      ),
    ),
    config: v.pipe(
      v.nullable(v.record(v.string(), v.unknown())),
      v.description('Fragment to merge into opencode.json (MCP servers, instructions), or null'),
    ),
  }),
  v.title('ResolvedConfigObject'),
)
/** `{item: ResolvedConfigObject}`. */
export const ResolvedConfigObjectItem = itemOf(ResolvedConfigObject, 'ResolvedConfigObjectItem')

/** `GET /v1/config-objects` query. */
export const ConfigObjectListQuery = v.object({
  ...pageQuery(),
  type: v.optional(ObjectTypeField),
  status: v.optional(v.picklist(OBJECT_STATES, `must be one of ${OBJECT_STATES.join(', ')}`)),
  sourceMode: v.optional(v.picklist(SOURCE_MODES, `must be one of ${SOURCE_MODES.join(', ')}`)),
  plugin: v.optional(v.pipe(idOf('plg'), v.description('Only objects in this plugin'))),
  connectorInstance: v.optional(
    v.pipe(v.string(), v.minLength(1), v.maxLength(64), v.description('Only objects owned by this connector instance')),
  ),
  deleted: v.optional(
    v.pipe(
      v.picklist(['exclude', 'include', 'only'], 'must be exclude, include or only'),
      v.description('Deleted objects: exclude (default unless status is given), include, or only'),
    ),
  ),
  q: v.optional(
    v.pipe(
      v.string(),
      v.minLength(1),
      v.maxLength(255),
      v.description('Words, each matched as a prefix of a word in the title, description or latest content'),
    ),
  ),
})

/** An access grant. */
export const AccessGrant = v.pipe(
  v.strictObject({
    id: idOf('agr'),
    resourceType: v.picklist(RESOURCE_TYPES),
    resourceId: v.string(),
    memberId: v.nullable(idOf('mem')),
    teamId: v.nullable(idOf('team')),
    orgWide: v.boolean(),
    role: v.picklist(GRANT_ROLES),
    createdByMemberId: v.nullable(idOf('mem')),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('AccessGrant'),
)
/** A page of grants. */
export const AccessGrantPage = pageOf(AccessGrant, 'AccessGrantPage')
/** `{item: AccessGrant}`. */
export const AccessGrantItem = itemOf(AccessGrant, 'AccessGrantItem')

/** A principal: exactly one of a member, a team, or the organization. */
export const PrincipalFields = {
  memberId: v.optional(idOf('mem')),
  teamId: v.optional(idOf('team')),
  orgWide: v.optional(v.literal(true, 'must be true when given')),
}
/** Checks "exactly one principal". */
export function exactlyOnePrincipal(body: { memberId?: unknown; teamId?: unknown; orgWide?: unknown }): boolean {
  return [body.memberId, body.teamId, body.orgWide].filter((x) => x !== undefined).length === 1
}
/** Grant body. */
export const CreateGrantBody = v.pipe(
  v.strictObject({ ...PrincipalFields, role: v.picklist(GRANT_ROLES, 'must be viewer, editor or manager') }),
  v.check((body) => exactlyOnePrincipal(body), 'give exactly one of memberId, teamId or orgWide: true'),
)

/** Converts a validated principal body to the domain shape. */
export function principalOf(body: {
  memberId?: string
  teamId?: string
  orgWide?: true
}): { memberId: string } | { teamId: string } | { orgWide: true } {
  if (body.memberId) return { memberId: body.memberId }
  if (body.teamId) return { teamId: body.teamId }
  return { orgWide: true }
}

/** `POST /v1/config-objects/import` query. */
export const SkillImportQuery = v.object({
  preview: v.optional(
    v.pipe(
      v.picklist(['true', 'false'], 'must be true or false'),
      v.description('true: answer what the import would do and store nothing'),
    ),
  ),
})

/** What a zip import did (or would do) with each skill folder. */
export const SkillImportResult = v.pipe(
  v.strictObject({
    preview: v.boolean(),
    items: v.array(
      v.strictObject({
        name: v.string(),
        folder: v.pipe(v.string(), v.description("The folder in the archive ('' for a SKILL.md at its root)")),
        action: v.picklist(['create', 'update', 'unchanged']),
        configObjectId: v.pipe(v.nullable(idOf('cob')), v.description('null for a create in a preview')),
        versionId: v.nullable(idOf('cov')),
        versionNumber: v.number(),
        fileCount: v.pipe(v.number(), v.description('Files beside SKILL.md')),
        bytes: v.number(),
      }),
    ),
  }),
  v.title('SkillImportResult'),
)
