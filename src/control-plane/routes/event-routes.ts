/**
 * `GET /v1/events`: the organization's change feed, as SSE when the client accepts
 * `text/event-stream` (resume with `Last-Event-ID`), otherwise a page after `?after=`. Both carry
 * the same events, numbered per organization; an event written through any instance reaches a
 * subscriber on any other (see events/change-feed.ts).
 * @module
 */
import * as v from 'valibot'
import { lastEventId, sseResponse, wantsEventStream, type SseSink, type StreamRegistry } from '../../core/sse.ts'
import { queryInt } from '../../core/validation.ts'
import { actorOf } from '../auth.ts'
import { type ChangeSubscriptions, latestSeq, readChanges, stillAllowed } from '../events/change-feed.ts'
import { isoAt } from '../deps.ts'
import { pageQuery } from '../pagination.ts'
import { rules } from '../policy.ts'
import { workerTokenActive } from '../delivery/worker-principal.ts'
import { findActiveOAuthToken } from '../oauth/oauth-tokens.ts'
import { route, type RouteContext } from './route.ts'

/** A change as the feed shows it. */
export const ChangeEventSchema = v.object({
  seq: v.pipe(v.number(), v.description('Position in the organization feed; resume after it')),
  kind: v.pipe(
    v.string(),
    v.description(
      'What changed, e.g. `config_object.created`, `config_object.version_added`, `access.granted`, `skill_hub.assigned`, `connector_sync.state_changed`, `worker.state_changed`; `visibility.changed` when something the caller cannot see changed what they can see (re-read `/v1/me/skills`)',
    ),
  ),
  subject: v.nullable(v.object({ type: v.string(), id: v.string() })),
  data: v.nullable(v.record(v.string(), v.unknown())),
  createdAt: v.string(),
})

/** How often a live stream re-reads even without a wake-up: a lost notification costs at most this. */
const FALLBACK_POLL_MS = 5_000

/** The change-feed route. */
export function eventRoutes(ctx: RouteContext, subscriptions: ChangeSubscriptions, streams: StreamRegistry) {
  return [
    route({
      method: 'GET',
      path: '/v1/events',
      operationId: 'listChangeEvents',
      tags: ['events'],
      summary: "The organization's change feed (JSON page, or SSE with Last-Event-ID resume)",
      description:
        "What changed in the organization that the caller may see: config objects created, versioned, archived, restored, deleted; grants and skill-hub assignments changing what the caller can see; plugin and marketplace membership; connector syncs moving state; Worker state changes. With `Accept: text/event-stream` an SSE stream (`id:` = seq, `event:` = kind, heartbeat comments every 15 s; resume with `Last-Event-ID`, `?lastEventId=` or `?after=`; without them the stream starts at the newest change). Otherwise `{items, next}`: the changes after `after`, oldest first; pass `next` back as `after`. Changes made through any instance appear on every instance. `delivery.changed` tells the members (or the Worker) it names that what is delivered to them may have changed (re-read `GET /v1/me/delivery`); a Worker's activity token sees only the `delivery.changed` events naming that Worker.",
      // A delivery:read token follows the feed too: it is how a linked workspace hears of changes.
      auth: rules.orgOrWorker('config_objects.read', {
        oauthScopes: ['delivery:read', 'catalog:read', 'catalog:write'],
      }),
      query: v.object({
        after: queryInt({ min: 0, max: Number.MAX_SAFE_INTEGER, description: 'Return changes after this seq' }),
        limit: pageQuery({ defaultLimit: 100 }).limit,
      }),
      responses: {
        200: {
          description: 'A page of changes, or an SSE stream when requested',
          schema: v.object({ items: v.array(ChangeEventSchema), next: v.number() }),
          headers: { 'content-type': 'application/json, or text/event-stream when the client asked for it' },
          events: ChangeEventSchema,
        },
      },
      errors: [400],
      handler: async ({ request, url, principal, query }) => {
        const worker = principal.worker ?? null
        const actor = worker ? { orgId: worker.orgId, workerId: worker.id } : actorOf(principal)
        const db = ctx.deps.db
        if (!wantsEventStream(request)) {
          const page = await readChanges(db, actor, query.after ?? 0, query.limit ?? 100)
          return { items: page.items, next: page.next }
        }
        const resume = lastEventId(request, url)
        const after =
          resume !== null && /^\d+$/.test(resume) ? Number(resume) : (query.after ?? (await latestSeq(db, actor.orgId)))
        return sseResponse({
          registry: streams,
          start: (sink) => follow(sink, after),
        })

        function follow(sink: SseSink, from: number): () => void {
          let last = from
          // Changes written before the stream opened are catch-up, not lag.
          const openedAt = ctx.deps.now()
          let running = false
          let again = false
          // One read at a time per stream; wake-ups during a read schedule exactly one more.
          const pump = async () => {
            if (running) {
              again = true
              return
            }
            running = true
            try {
              do {
                again = false
                const credential = { sessionId: principal.session?.id ?? null, apiKeyId: principal.apiKeyId }
                // An OAuth token's stream lives with its grant (revoked, expired or the member removed ends it).
                const allowed = worker
                  ? await workerTokenActive(db, worker)
                  : principal.oauth
                    ? (await findActiveOAuthToken(ctx.deps, principal.oauth.tokenId)) !== null
                    : await stillAllowed(db, actorOf(principal), credential, isoAt(ctx.deps))
                if (!allowed) {
                  sink.close()
                  return
                }
                for (;;) {
                  const page = await readChanges(db, actor, last, 200)
                  if (sink.closed) return
                  for (const item of page.items) {
                    sink.send({ id: item.seq, event: item.kind, data: item })
                    const written = Date.parse(item.createdAt)
                    if (written >= openedAt) subscriptions.delivered((ctx.deps.now() - written) / 1000)
                  }
                  const moved = page.next > last
                  last = page.next
                  if (!moved || page.items.length < 200) break
                }
              } while (again && !sink.closed)
            } catch {
              // The database is unavailable for a moment: the next wake-up or poll tries again.
            } finally {
              running = false
            }
          }
          const unsubscribe = subscriptions.subscribe(actor.orgId, () => void pump())
          const poll = setInterval(() => void pump(), FALLBACK_POLL_MS)
          void pump()
          return () => {
            unsubscribe()
            clearInterval(poll)
          }
        }
      },
    }),
  ]
}
