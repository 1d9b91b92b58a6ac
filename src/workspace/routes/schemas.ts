/**
 * Wire schemas shared by the workspace routes (documentation and validation of inputs).
 * @module
 */
import * as v from 'valibot'

/** `:id` of a workspace. */
export const WorkspaceParams = v.object({ id: v.pipe(v.string(), v.minLength(1), v.maxLength(128)) })
/** `:id` plus an extension `:name`. */
export const NamedParams = v.object({
  id: v.pipe(v.string(), v.minLength(1), v.maxLength(128)),
  name: v.pipe(v.string(), v.maxLength(512)),
})

/** The actor shown in audit entries and approvals: never a credential. */
export const ActorSchema = v.object({
  type: v.picklist(['anonymous', 'remote', 'host']),
  scope: v.nullable(v.picklist(['viewer', 'collaborator', 'owner'])),
  tokenId: v.optional(v.string()),
  clientId: v.optional(v.string()),
})

/** A pending approval. */
const DigestSchema = v.nullable(
  v.object({
    bytes: v.number(),
    sha256: v.pipe(v.nullable(v.string()), v.description('null when the content holds masked secrets')),
  }),
)

/** One path of what a held write would change (see `describeChanges`). */
export const DescribedChangeSchema = v.object({
  path: v.pipe(v.string(), v.description('workspace-relative')),
  action: v.picklist(['create', 'update', 'delete']),
  before: DigestSchema,
  after: DigestSchema,
  diff: v.optional(v.pipe(v.string(), v.description('unified diff of the text (`---`, `+++`, `@@` hunks)'))),
  diffOmitted: v.optional(v.picklist(['binary', 'too_large', 'total_limit', 'directory', 'secrets'])),
  masked: v.optional(v.pipe(v.literal(true), v.description('secret values in the diff read ********'))),
  executable: v.optional(
    v.pipe(
      v.object({ before: v.boolean(), after: v.boolean() }),
      v.description('the write flips the execute bit, or creates an executable file (before: false)'),
    ),
  ),
})

export const ApprovalSchema = v.object({
  id: v.string(),
  workspaceId: v.string(),
  action: v.string(),
  summary: v.string(),
  paths: v.array(v.string()),
  createdAt: v.pipe(v.number(), v.description('epoch milliseconds')),
  actor: ActorSchema,
  changes: v.optional(
    v.pipe(
      v.array(DescribedChangeSchema),
      v.description('What the write would change, per path; present on every write through the write gate'),
    ),
  ),
})

/** A workspace as clients see it. */
export const WorkspaceSchema = v.object({
  id: v.string(),
  name: v.string(),
  path: v.string(),
  workspaceType: v.literal('local'),
})

/** A workspace event. */
export const EventSchema = v.looseObject({
  id: v.string(),
  seq: v.number(),
  workspaceId: v.string(),
  type: v.picklist(['reload', 'approval.requested', 'approval.decided', 'org.state', 'org.applied']),
  timestamp: v.number(),
  reason: v.optional(v.picklist(['config', 'plugins', 'skills', 'mcp', 'commands'])),
  trigger: v.optional(
    v.looseObject({
      type: v.string(),
      name: v.optional(v.string()),
      action: v.optional(v.string()),
      path: v.optional(v.string()),
    }),
  ),
  source: v.optional(v.picklist(['server', 'disk'])),
  approval: v.optional(v.record(v.string(), v.unknown())),
  decision: v.optional(v.record(v.string(), v.unknown())),
  org: v.optional(v.record(v.string(), v.unknown())),
})

/** An audit entry. */
export const AuditEntrySchema = v.object({
  id: v.string(),
  workspaceId: v.string(),
  actor: ActorSchema,
  action: v.string(),
  target: v.string(),
  summary: v.string(),
  timestamp: v.number(),
})

/**
 * Statuses every gated write can add: 403 `read_only`/`write_denied`, 409 `write_conflict`,
 * 422 unparsable config on disk, 503 `server_stopping` while an approval was pending.
 */
export const WRITE_ERRORS = [403, 409, 422, 503]

/** A JSON object of arbitrary keys (config documents). */
export const JsonObject = v.record(v.string(), v.unknown())

/** The SSE response description; `schema` is each event's JSON `data:`. */
export const eventStreamResponse = (description: string, schema?: v.GenericSchema) => ({
  description,
  contentType: 'text/event-stream',
  ...(schema ? { schema } : {}),
})
