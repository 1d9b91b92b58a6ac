/**
 * `/v1/audit-events`: the organization's audit log, filtered and paged, and its streamed export.
 * @module
 */
import * as v from 'valibot'
import { queryString } from '../../core/validation.ts'
import { exportAuditEvents, listAuditEvents, type AuditFilter } from '../audit/audit-query.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { AuditEventPage } from '../wire/admin.ts'
import { route, type RouteContext } from './route.ts'

const instant = (what: string) =>
  v.optional(
    v.pipe(
      v.string('must be given once'),
      v.maxLength(40),
      v.check((text) => !Number.isNaN(Date.parse(text)), 'must be an ISO-8601 time'),
      v.description(what),
    ),
  )

const picklistParam = <T extends string>(values: readonly [T, ...T[]], what: string) =>
  v.optional(v.pipe(v.picklist(values, `must be one of ${values.join(', ')}`), v.description(what)))

/** The filters the list and the export share. */
const filters = {
  actor: v.optional(
    v.pipe(
      v.string('must be given once'),
      v.maxLength(64),
      v.description('A user (`usr_`), member (`mem_`) or API key (`key_`) id'),
    ),
  ),
  action: queryString({ maxLength: 64 }),
  targetType: queryString({ maxLength: 64 }),
  targetId: queryString({ maxLength: 200 }),
  outcome: picklistParam(['success', 'denied', 'failed'], 'How the request ended'),
  origin: picklistParam(['api', 'console', 'mcp', 'scim', 'sso'], 'Where the request came from'),
  credential: picklistParam(
    ['session', 'apiKey', 'oauth', 'worker', 'scim', 'anonymous'],
    'The credential the request proved',
  ),
  requestId: queryString({ maxLength: 128 }),
  since: instant('Events at or after this time (ISO-8601)'),
  until: instant('Events before this time (ISO-8601)'),
}

const CONTENT_TYPES = { ndjson: 'application/x-ndjson', csv: 'text/csv; charset=utf-8' } as const

/** Routes of the audit log. */
export function auditRoutes(ctx: RouteContext) {
  return [
    route({
      method: 'GET',
      path: '/v1/audit-events',
      operationId: 'listAuditEvents',
      tags: ['audit'],
      summary: 'Audit events of the organization, newest first',
      description:
        "One event per state-changing request (and the handler's named events): actor and credential, action, target, outcome with the error code, request id, route and origin; never request bodies, secrets or query strings. Includes the events outside any organization whose actor is a member (refused sign-ins). Filters combine with AND.",
      auth: rules.org('audit.read'),
      query: v.object({ ...pageQuery(), ...filters }),
      responses: { 200: AuditEventPage },
      errors: [400],
      handler: ({ principal, query }) => listAuditEvents(ctx.deps, principal.org!.id, query),
    }),
    route({
      method: 'GET',
      path: '/v1/audit-events/export',
      operationId: 'exportAuditEvents',
      tags: ['audit'],
      summary: 'Stream audit events as NDJSON or CSV, oldest first',
      description:
        "The same filters as the list, for any range: rows are read in batches as the client reads, so a year of events never sits in memory. CSV has a header row; cells a spreadsheet would run as a formula are prefixed with `'`.",
      auth: rules.org('audit.read'),
      query: v.object({
        format: v.optional(v.picklist(['ndjson', 'csv'], 'must be ndjson or csv'), 'ndjson'),
        ...filters,
      }),
      responses: {
        200: {
          description: 'One JSON event per line (`application/x-ndjson`), or CSV (`text/csv`)',
          contentType: 'application/x-ndjson',
        },
      },
      handler: ({ principal, query }) => {
        const { format, ...filter } = query
        const body = exportAuditEvents(ctx.deps, principal.org!.id, filter as AuditFilter, format)
        const stamp = new Date(ctx.deps.now()).toISOString().replaceAll(':', '-').slice(0, 19)
        return new Response(body, {
          headers: {
            'content-type': CONTENT_TYPES[format],
            'content-disposition': `attachment; filename="audit-events-${stamp}.${format}"`,
            'cache-control': 'no-store',
          },
        })
      },
    }),
  ]
}
