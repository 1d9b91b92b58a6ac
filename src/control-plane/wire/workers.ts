/**
 * Wire schemas of hosted Workers.
 * @module
 */
import * as v from 'valibot'
import { WORKER_STATES, WORKER_TOKEN_SCOPES } from '../workers/workers.ts'
import { documentQueryParam } from '../openapi-policy.ts'
import { LOG_ANSWER_MAX_BYTES, LOG_LINE_MAX, LOG_TAIL_DEFAULT, LOG_TAIL_MAX } from '../workers/runtime-log.ts'
import { idOf, intColumn, itemOf, nameField, pageOf, Timestamp } from './common.ts'

const Reason = v.pipe(
  v.nullable(v.string()),
  v.description(
    'Why the Worker is in its state, e.g. created, heartbeat, heartbeat_stale, provisioning_deadline_exceeded, provisioner_error, tokens_rotated, tokens_revoked, deleting, control_plane_stopped, control_plane_restarted, runtime_recovered, control_plane_instance_lost, engine_unreachable, engine_reachable',
  ),
)

/** A Worker. */
export const Worker = v.pipe(
  v.strictObject({
    id: idOf('wrk'),
    name: v.string(),
    description: v.nullable(v.string()),
    provisioner: v.string(),
    state: v.picklist(WORKER_STATES),
    stateReason: Reason,
    stateMessage: v.nullable(v.string()),
    version: v.nullable(v.string()),
    lastHeartbeatAt: v.nullable(Timestamp),
    createdByMemberId: v.nullable(idOf('mem')),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
  v.title('Worker'),
)
/** A page of Workers. */
export const WorkerPage = pageOf(Worker, 'WorkerPage')
/** `{item: Worker}`. */
export const WorkerItem = itemOf(Worker, 'WorkerItem')

/** `POST /v1/workers`. */
export const CreateWorkerBody = v.strictObject({
  name: nameField(255),
  description: v.optional(v.nullable(v.pipe(v.string(), v.maxLength(1024, 'must be at most 1024 characters')))),
  provisioner: v.pipe(
    v.string(),
    v.minLength(1),
    v.maxLength(64),
    v.description('How the Worker runs: `process` (a child process on the control-plane host)'),
  ),
})

/** Runtime status. */
export const WorkerRuntime = v.pipe(
  v.strictObject({
    workerId: idOf('wrk'),
    state: v.picklist(WORKER_STATES),
    stateReason: Reason,
    stateMessage: v.nullable(v.string()),
    version: v.nullable(v.string()),
    url: v.pipe(v.nullable(v.string()), v.description('Where clients reach the runtime')),
    lastHeartbeatAt: v.nullable(Timestamp),
    lastActiveAt: v.nullable(Timestamp),
    openSessionCount: v.nullable(v.number()),
    staleAfterMs: v.pipe(
      v.number(),
      v.description('A healthy Worker without a heartbeat for this long becomes unreachable'),
    ),
    provisioningDeadlineAt: v.nullable(Timestamp),
    lastError: v.nullable(v.strictObject({ reason: v.string(), message: v.string(), at: Timestamp })),
  }),
  v.title('WorkerRuntime'),
)
/** `{item: WorkerRuntime}`. */
export const WorkerRuntimeItem = itemOf(WorkerRuntime, 'WorkerRuntimeItem')

/** A stored Worker token (never its value). */
export const WorkerToken = v.pipe(
  v.strictObject({
    id: idOf('wkt'),
    scope: v.picklist(WORKER_TOKEN_SCOPES),
    generation: v.number(),
    createdAt: Timestamp,
    revokedAt: v.nullable(Timestamp),
  }),
  v.title('WorkerToken'),
)
/** A page of Worker tokens. */
export const WorkerTokenPage = pageOf(WorkerToken, 'WorkerTokenPage')

/** A newly issued token set: the only time the values are shown. */
export const IssuedWorkerTokens = v.pipe(
  v.strictObject({
    item: v.strictObject({
      worker: Worker,
      generation: v.number(),
      tokens: v.strictObject({
        client: v.pipe(
          v.string(),
          v.startsWith('wkc_'),
          v.description('Authorization: Bearer for clients of the runtime'),
        ),
        host: v.pipe(
          v.string(),
          v.startsWith('wkh_'),
          v.description("X-Service-Host-Token for the runtime's host routes"),
        ),
        activity: v.pipe(v.string(), v.startsWith('wka_'), v.description('What the runtime sends with heartbeats')),
      }),
    }),
  }),
  v.title('IssuedWorkerTokens'),
)

/** Heartbeat body. */
export const HeartbeatBody = v.strictObject({
  sentAt: v.optional(Timestamp),
  isActiveRecently: v.optional(v.boolean()),
  lastActivityAt: v.optional(Timestamp),
  openSessionCount: v.optional(intColumn()),
  version: v.optional(v.pipe(v.string(), v.maxLength(64))),
})
/** Heartbeat answer. */
export const HeartbeatItem = itemOf(
  v.pipe(
    v.strictObject({
      workerId: idOf('wrk'),
      state: v.picklist(WORKER_STATES),
      lastHeartbeatAt: Timestamp,
      nextHeartbeatInMs: v.number(),
    }),
    v.title('HeartbeatAck'),
  ),
  'HeartbeatItem',
)

/** `GET /v1/workers/:id/logs` query. */
export const WorkerLogsQuery = v.object({
  tail: documentQueryParam(
    v.optional(
      v.pipe(
        v.string('must be given once'),
        v.regex(/^-?\d+$/, 'must be an integer'),
        v.transform(Number),
        v.number(),
        v.minValue(1, 'must be at least 1'),
        v.maxValue(LOG_TAIL_MAX, `must be at most ${LOG_TAIL_MAX}`),
      ),
      String(LOG_TAIL_DEFAULT),
    ),
    {
      type: 'integer',
      minimum: 1,
      maximum: LOG_TAIL_MAX,
      default: LOG_TAIL_DEFAULT,
      description: `Most lines to answer (the newest), 1 to ${LOG_TAIL_MAX}`,
    },
  ),
})

/** A runtime's recent output. */
export const WorkerLogs = v.pipe(
  v.strictObject({
    lines: v.pipe(
      v.array(v.string()),
      v.description(
        `Output lines (stdout and stderr interleaved), oldest first, secrets replaced by [redacted]; a line over ${LOG_LINE_MAX} characters is cut, and the answer carries at most ${LOG_ANSWER_MAX_BYTES / 1024} KiB`,
      ),
    ),
    truncated: v.pipe(
      v.boolean(),
      v.description('True when the bounds cut this answer: a line was shortened, or lines within `tail` were left out'),
    ),
  }),
  v.title('WorkerLogs'),
)
