/**
 * `GET /workspace/:id/events`: SSE when the client accepts `text/event-stream`, otherwise a
 * page of events after `?since=`. Both use the event `seq` as cursor, so nothing is lost across
 * reconnects (`Last-Event-ID`) or restarts (events are persisted).
 * @module
 */
import * as v from 'valibot'
import { routeFactory } from '../../core/route.ts'
import { lastEventId, replayThenFollow, sseResponse, wantsEventStream, type StreamRegistry } from '../../core/sse.ts'
import { queryInt } from '../../core/validation.ts'
import { rules, type Principal, type WorkspaceRule } from '../access/auth.ts'
import type { WorkspaceEvent } from '../events/event-store.ts'
import type { WorkspaceServices } from '../runtime/workspace-services.ts'
import { EventSchema, WorkspaceParams } from './schemas.ts'

const route = routeFactory<WorkspaceRule, Principal>()

/** The workspace event route. */
export function eventRoutes(s: WorkspaceServices, streams: StreamRegistry) {
  return [
    route({
      method: 'GET',
      path: '/workspace/:id/events',
      operationId: 'workspaceEvents',
      summary: 'Workspace events (JSON page or SSE)',
      tags: ['events'],
      description:
        'Reload events (config and extension changes made through the server or on disk), approval events and organization-link events (`org.state`, `org.applied`). With `Accept: text/event-stream` an SSE stream (`id:` = seq, `event:` = type; resume with `Last-Event-ID` or `?since=`); otherwise `{items, cursor}` after `since`.',
      auth: rules.viewer,
      params: WorkspaceParams,
      query: v.object({
        since: queryInt({
          min: 0,
          max: Number.MAX_SAFE_INTEGER,
          description: 'Return events with seq greater than this',
        }),
        limit: queryInt({ min: 1, max: 1000, default: 200, description: 'Page size for JSON (1-1000, default 200)' }),
      }),
      responses: {
        200: {
          description: 'A page of events, or an SSE stream when requested',
          schema: v.object({ items: v.array(EventSchema), cursor: v.number(), workspaceId: v.string() }),
          headers: { 'content-type': 'application/json, or text/event-stream when the client asked for it' },
          events: EventSchema,
        },
      },
      handler: async ({ request, url, params, query }) => {
        const ws = s.workspaces.get(params.id)
        const workspaceId = ws.entry.id
        if (wantsEventStream(request)) {
          const resume = lastEventId(request, url)
          const after =
            resume !== null && /^\d+$/.test(resume) ? Number(resume) : (query.since ?? (await s.events.latestSeq()))
          return sseResponse({
            registry: streams,
            start: (sink) =>
              replayThenFollow<WorkspaceEvent>({
                sink,
                after,
                backlog: (from) => s.events.list({ after: from, workspaceId, limit: 100_000 }),
                subscribe: (listener) =>
                  s.events.subscribe((e) => {
                    if (e.workspaceId === workspaceId) listener(e)
                  }),
                toEvent: (e) => ({ id: e.seq, event: e.type, data: e }),
              }),
          })
        }
        const since = query.since ?? 0
        const items = await s.events.list({ after: since, workspaceId, limit: query.limit ?? 200 })
        const cursor = items.length ? items[items.length - 1]!.seq : Math.max(since, await s.events.latestSeq())
        return { items, cursor, workspaceId }
      },
    }),
  ]
}
