/**
 * Wire schemas of delivery: the delivered set, plugin assignments and a Worker's delivery.
 * @module
 */
import * as v from 'valibot'
import { OBJECT_TYPES } from '../catalog/config-source.ts'
import { MAX_WORKER_DELIVERY } from '../delivery/worker-delivery.ts'
import { idOf, itemOf, pageOf, Timestamp } from './common.ts'
import { exactlyOnePrincipal, PrincipalFields } from './config-objects.ts'

const Sha256 = v.pipe(v.string(), v.regex(/^[0-9a-f]{64}$/), v.description('SHA-256, lowercase hex'))

/** Why an item arrives. */
export const DeliveryReason = v.strictObject({
  via: v.picklist(['hub', 'plugin', 'grant', 'worker']),
  id: v.pipe(v.string(), v.description('The hub, plugin, grant or Worker')),
  name: v.pipe(
    v.string(),
    v.description("The hub's or plugin's name; a grant's role (`viewer grant`); the Worker's name"),
  ),
  scope: v.picklist(['member', 'team', 'organization', 'worker']),
  team: v.optional(v.strictObject({ id: idOf('team'), name: v.string() })),
})

/** One file of a delivered item. */
export const DeliveredFile = v.strictObject({
  path: v.pipe(v.string(), v.description("Relative to the item's home (see the item's `type`)")),
  encoding: v.picklist(['utf8', 'base64']),
  content: v.string(),
  executable: v.boolean(),
  size: v.pipe(v.number(), v.description('Bytes')),
  sha256: Sha256,
})

/** One delivered item. */
export const DeliveredItem = v.pipe(
  v.strictObject({
    objectId: v.string(),
    type: v.picklist([...OBJECT_TYPES, 'llm_provider']),
    name: v.pipe(v.string(), v.description('The on-disk name: skill folder, command/agent file stem, MCP key')),
    versionId: v.string(),
    digest: Sha256,
    reasons: v.array(DeliveryReason),
    files: v.array(DeliveredFile),
    config: v.optional(
      v.pipe(
        v.record(v.string(), v.unknown()),
        v.description("The opencode.json fragment (mcp, context instructions, a Worker's provider)"),
      ),
    ),
  }),
  v.title('DeliveredItem'),
)

/** `GET /v1/me/delivery`. */
export const DeliverySetResponse = v.pipe(
  v.strictObject({
    principal: v.union([
      v.strictObject({ kind: v.literal('member'), userId: idOf('usr'), memberId: idOf('mem') }),
      v.strictObject({ kind: v.literal('worker'), workerId: idOf('wrk') }),
    ]),
    organization: v.strictObject({ id: idOf('org'), name: v.string() }),
    digest: v.pipe(Sha256, v.description("Over every item's (objectId, versionId, digest), sorted")),
    items: v.array(DeliveredItem),
  }),
  v.title('DeliverySet'),
)

/** An assignment of a plugin to a member, a team or the organization. */
export const PluginAssignment = v.pipe(
  v.strictObject({
    id: idOf('pla'),
    pluginId: idOf('plg'),
    memberId: v.nullable(idOf('mem')),
    teamId: v.nullable(idOf('team')),
    orgWide: v.boolean(),
    createdByMemberId: v.nullable(idOf('mem')),
    createdAt: Timestamp,
  }),
  v.title('PluginAssignment'),
)
/** A page of PluginAssignment. */
export const PluginAssignmentPage = pageOf(PluginAssignment, 'PluginAssignmentPage')
/** `{item}` with one PluginAssignment. */
export const PluginAssignmentItem = itemOf(PluginAssignment, 'PluginAssignmentItem')
/** Assignment body: exactly one of memberId, teamId or orgWide: true. */
export const AssignPluginBody = v.pipe(
  v.strictObject(PrincipalFields),
  v.check((b) => exactlyOnePrincipal(b), 'give exactly one of memberId, teamId or orgWide: true'),
)

const ids = (prefix: string, what: string) =>
  v.pipe(
    v.array(idOf(prefix)),
    v.maxLength(MAX_WORKER_DELIVERY, `at most ${MAX_WORKER_DELIVERY} ${what}`),
    v.description(`The ${what} the Worker receives`),
  )

/** `PUT /v1/workers/:id/delivery`: the whole delivery, replacing the previous one. */
export const WorkerDeliveryBody = v.strictObject({
  hubIds: ids('shub', 'skill hubs'),
  pluginIds: ids('plg', 'plugins'),
  llmProviderIds: ids('llm', 'model providers'),
})

/** A Worker's delivery. */
export const WorkerDeliveryItem = itemOf(
  v.pipe(
    v.strictObject({
      workerId: idOf('wrk'),
      hubIds: v.array(idOf('shub')),
      pluginIds: v.array(idOf('plg')),
      llmProviderIds: v.array(idOf('llm')),
    }),
    v.title('WorkerDelivery'),
  ),
  'WorkerDeliveryItem',
)
