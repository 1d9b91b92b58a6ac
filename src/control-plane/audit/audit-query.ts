/**
 * Reading the audit log: the filtered, cursor-paged list and the streamed export (NDJSON or CSV).
 * An organization sees its own events and the events outside any organization whose actor is one
 * of its current members (their refused sign-ins, their sign-up).
 *
 * The export walks the range in key-set batches of {@link EXPORT_BATCH} rows, fetching the next
 * batch only when the client has taken the previous one (ReadableStream `pull`), so any range is
 * exported with one batch in memory.
 * @module
 */
import type { ExpressionBuilder, SelectQueryBuilder } from 'kysely'
import type { Deps } from '../deps.ts'
import { keysetPage, type Page } from '../pagination.ts'
import type { ControlPlaneDb } from '../schema.ts'

/** Rows fetched per export batch. */
export const EXPORT_BATCH = 500

/** Non-secret facts of an event. */
export type AuditEventData = Record<string, string | number | boolean | null>

/** An audit event as the API shows it. */
export interface AuditEventView {
  id: string
  action: string
  actor: { userId: string | null; memberId: string | null; credential: string; apiKeyId: string | null }
  origin: string
  target: { type: string; id: string }
  outcome: string
  errorCode: string | null
  requestId: string | null
  route: string | null
  data: AuditEventData | null
  createdAt: string
}

/** The filters of the list and the export (all optional, combined with AND). */
export interface AuditFilter {
  /** A user (`usr_`), member (`mem_`) or API key (`key_`) id. */
  actor?: string
  action?: string
  targetType?: string
  targetId?: string
  outcome?: string
  origin?: string
  requestId?: string
  credential?: string
  /** ISO-8601 bounds on the event time: `since` inclusive, `until` exclusive. */
  since?: string
  until?: string
}

type Row = ControlPlaneDb['audit_event']
type Query = SelectQueryBuilder<ControlPlaneDb, 'audit_event', Row>

function filtered(deps: Deps, orgId: string, filter: AuditFilter): Query {
  let query = deps.db
    .selectFrom('audit_event')
    .selectAll()
    .where((eb: ExpressionBuilder<ControlPlaneDb, 'audit_event'>) =>
      eb.or([
        eb('org_id', '=', orgId),
        eb.and([
          eb('org_id', 'is', null),
          eb('actor_user_id', 'in', eb.selectFrom('member').select('user_id').where('member.org_id', '=', orgId)),
        ]),
      ]),
    ) as Query
  const { actor } = filter
  if (actor?.startsWith('mem_')) query = query.where('actor_member_id', '=', actor)
  else if (actor?.startsWith('key_')) query = query.where('api_key_id', '=', actor)
  else if (actor !== undefined) query = query.where('actor_user_id', '=', actor)
  if (filter.action !== undefined) query = query.where('action', '=', filter.action)
  if (filter.targetType !== undefined) query = query.where('target_type', '=', filter.targetType)
  if (filter.targetId !== undefined) query = query.where('target_id', '=', filter.targetId)
  if (filter.outcome !== undefined) query = query.where('outcome', '=', filter.outcome)
  if (filter.credential !== undefined) query = query.where('credential_kind', '=', filter.credential)
  if (filter.origin === 'api') query = query.where((eb) => eb.or([eb('origin', '=', 'api'), eb('origin', 'is', null)]))
  else if (filter.origin !== undefined) query = query.where('origin', '=', filter.origin)
  if (filter.requestId !== undefined) query = query.where('request_id', '=', filter.requestId)
  if (filter.since !== undefined) query = query.where('created_at', '>=', new Date(filter.since).toISOString())
  if (filter.until !== undefined) query = query.where('created_at', '<', new Date(filter.until).toISOString())
  return query
}

/** An event row as the API shows it. */
export function auditEventView(row: Row): AuditEventView {
  return {
    id: row.id,
    action: row.action,
    actor: {
      userId: row.actor_user_id,
      memberId: row.actor_member_id,
      credential: row.credential_kind,
      apiKeyId: row.api_key_id,
    },
    origin: row.origin ?? 'api',
    target: { type: row.target_type, id: row.target_id },
    outcome: row.outcome,
    errorCode: row.error_code,
    requestId: row.request_id,
    route: row.route,
    data: row.data ? (JSON.parse(row.data) as AuditEventData) : null,
    createdAt: row.created_at,
  }
}

/** Audit events of an organization, newest first, filtered. */
export function listAuditEvents(
  deps: Deps,
  orgId: string,
  page: AuditFilter & { cursor?: string; limit: number },
): Promise<Page<AuditEventView>> {
  return keysetPage(filtered(deps, orgId, page), {
    scope: 'audit-events',
    cursor: page.cursor,
    limit: page.limit,
    order: [{ column: 'id', field: 'id', direction: 'desc' }],
    map: auditEventView,
  })
}

/** Export formats. */
export type ExportFormat = 'ndjson' | 'csv'

/** CSV columns, in order. */
export const CSV_COLUMNS = [
  'id',
  'createdAt',
  'action',
  'outcome',
  'errorCode',
  'credential',
  'actorUserId',
  'actorMemberId',
  'apiKeyId',
  'origin',
  'targetType',
  'targetId',
  'requestId',
  'route',
  'data',
] as const

/**
 * One CSV cell (RFC 4180): quoted when it holds a comma, quote or line break, quotes doubled. A
 * cell a spreadsheet would run as a formula (starting `=`, `+`, `-`, `@`, tab or CR) is prefixed
 * with `'` so it stays text.
 */
export function csvCell(value: string | null): string {
  if (value === null) return ''
  let text = value
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text
}

function csvLine(view: AuditEventView): string {
  const cells: Array<string | null> = [
    view.id,
    view.createdAt,
    view.action,
    view.outcome,
    view.errorCode,
    view.actor.credential,
    view.actor.userId,
    view.actor.memberId,
    view.actor.apiKeyId,
    view.origin,
    view.target.type,
    view.target.id,
    view.requestId,
    view.route,
    view.data ? JSON.stringify(view.data) : null,
  ]
  return `${cells.map(csvCell).join(',')}\r\n`
}

/**
 * The organization's events matching `filter`, oldest first, as a stream of NDJSON lines or CSV
 * rows (with a header row); see the module comment.
 */
export function exportAuditEvents(
  deps: Deps,
  orgId: string,
  filter: AuditFilter,
  format: ExportFormat,
  batch = EXPORT_BATCH,
): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  let after: string | null = null
  let headerSent = format !== 'csv'
  let finished = false
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        if (!headerSent) {
          headerSent = true
          controller.enqueue(encoder.encode(`${CSV_COLUMNS.join(',')}\r\n`))
          return
        }
        if (finished) return
        let query = filtered(deps, orgId, filter)
        if (after !== null) query = query.where('id', '>', after)
        const rows = await query.orderBy('id', 'asc').limit(batch).execute()
        if (rows.length > 0) {
          after = rows[rows.length - 1]!.id
          let text = ''
          for (const row of rows) {
            const view = auditEventView(row)
            text += format === 'csv' ? csvLine(view) : `${JSON.stringify(view)}\n`
          }
          controller.enqueue(encoder.encode(text))
        }
        if (rows.length < batch) {
          finished = true
          controller.close()
        }
      },
      cancel() {
        finished = true
      },
    },
    { highWaterMark: 0 },
  )
}
