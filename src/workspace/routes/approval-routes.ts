/**
 * Approvals (host): list pending writes, decide one, or follow requests and decisions as SSE.
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { lastEventId, replayThenFollow, sseResponse, type StreamRegistry } from '../../core/sse.ts'
import { actorOf } from '../events/audit-log.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import type { WorkspaceEvent } from '../events/event-store.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { ApprovalSchema, EventSchema, eventStreamResponse } from './schemas.ts'
import { workspaceError } from '../workspace-errors.ts'

const route = routeFactory<WorkspaceRule, Principal>()
const APPROVAL_TYPES = ['approval.requested', 'approval.decided'] as const

/** `/approvals` routes. */
export function approvalRoutes(s: WorkspaceServices, streams: StreamRegistry) {
  return [
    route({
      method: 'GET',
      path: '/approvals',
      operationId: 'listApprovals',
      summary: 'Pending approvals',
      tags: ['approvals'],
      auth: rules.host,
      responses: { 200: v.object({ items: v.array(ApprovalSchema) }) },
      handler: () => ({ items: s.approvals.list() }),
    }),
    route({
      method: 'GET',
      path: '/approvals/events',
      operationId: 'streamApprovals',
      summary: 'Approval requests and decisions (SSE)',
      tags: ['approvals'],
      description:
        'Server-Sent Events `approval.requested` and `approval.decided` for every workspace; `id:` is the event seq, so `Last-Event-ID` resumes without loss. Without it the stream starts with the current pending requests.',
      auth: rules.host,
      responses: { 200: eventStreamResponse('SSE stream of approval events', EventSchema) },
      handler: async ({ request, url }) => {
        const resume = Number(lastEventId(request, url))
        const cursor =
          Number.isFinite(resume) && resume >= 0 && lastEventId(request, url) !== null
            ? resume
            : await s.events.latestSeq()
        const pendingIds = new Set(s.approvals.list().map((a) => a.id))
        return sseResponse({
          registry: streams,
          start: async (sink) => {
            if (lastEventId(request, url) === null) {
              // A fresh subscriber learns what is already waiting, replayed from the log.
              const waiting = (await s.events.list({ after: 0, types: ['approval.requested'], limit: 100_000 })).filter(
                (e) => pendingIds.has(String(e.approval?.id)) && e.seq <= cursor,
              )
              for (const e of waiting) sink.send({ id: e.seq, event: e.type, data: e })
            }
            return replayThenFollow<WorkspaceEvent>({
              sink,
              after: cursor,
              backlog: (after) => s.events.list({ after, types: [...APPROVAL_TYPES] }),
              subscribe: (listener) =>
                s.events.subscribe((e) => {
                  if ((APPROVAL_TYPES as readonly string[]).includes(e.type)) listener(e)
                }),
              toEvent: (e) => ({ id: e.seq, event: e.type, data: e }),
            })
          },
        })
      },
    }),
    route({
      method: 'POST',
      path: '/approvals/:approvalId',
      operationId: 'replyApproval',
      summary: 'Allow or deny a pending write',
      tags: ['approvals'],
      auth: rules.host,
      params: v.object({ approvalId: v.pipe(v.string(), v.maxLength(128)) }),
      body: v.object({ reply: v.picklist(['allow', 'deny']) }),
      responses: { 200: v.object({ ok: v.literal(true), allowed: v.boolean() }) },
      handler: async ({ params, body, principal }) => {
        const result = await s.approvals.decide(params.approvalId, body.reply, actorOf(principal))
        if (!result) throw workspaceError('approval_not_found', 'Approval not found or already decided')
        return { ok: true as const, allowed: result.allowed }
      },
    }),
  ]
}
