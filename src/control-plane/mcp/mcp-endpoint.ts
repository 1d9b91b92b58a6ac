/**
 * The MCP endpoint's sessions: one SDK transport and server per `Mcp-Session-Id`, bound to the
 * credential that opened it, capped per credential and in total, closed when idle, and cut off
 * from a client that stops reading its event stream (see bounded-stream.ts).
 *
 * Requests are answered as JSON (`enableJsonResponse`): every request of ours completes at once,
 * so a per-request event stream would only add a stream and a timer to each call. Server-initiated
 * messages (list and resource changes) go on the session's `GET /mcp` event stream, resumable with
 * `Last-Event-ID` from the session's event store.
 * @module
 */
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { randomBytes } from '../../core/random-bytes.ts'
import type { ControlPlanePrincipal } from '../auth.ts'
import { isoAt, type Deps } from '../deps.ts'
import { stillAllowed, type ChangeSubscriptions } from '../events/change-feed.ts'
import { findActiveOAuthToken } from '../oauth/oauth-tokens.ts'
import { boundedStream } from './bounded-stream.ts'
import { DeliveryWatch } from './delivery-watch.ts'
import { callerOf, credentialKey, type McpCaller } from './mcp-caller.ts'
import { authInfoFor, createMcpServer } from './mcp-server.ts'
import type { McpLimits } from './mcp-settings.ts'
import { MemoryEventStore } from './memory-event-store.ts'

/** One open session. */
interface McpSession {
  id: string
  credential: string
  orgId: string
  /** The principal of the latest request, for the re-checks of open streams. */
  principal: ControlPlanePrincipal
  transport: WebStandardStreamableHTTPServerTransport
  server: Server
  events: MemoryEventStore
  /** The caller's delivered set, kept current by the change feed, and the subscriptions on it. */
  watch: DeliveryWatch
  lastSeen: number
  /** Order of last use, for closing the least recently used (the clock may not move between requests). */
  lastUse: number
  openStreams: number
  closed: boolean
}

/** A JSON-RPC error answer outside any request (the transport's own shape). */
function rpcError(status: number, code: number, message: string, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })
}

/** The sessions of one instance. */
export class McpEndpoint {
  readonly #sessions = new Map<string, McpSession>()
  readonly #timer: ReturnType<typeof setInterval>
  #uses = 0

  constructor(
    private readonly deps: Deps,
    private readonly limits: McpLimits,
    private readonly changes: ChangeSubscriptions,
  ) {
    const every = Math.min(60_000, Math.max(1_000, (limits.idleSessionSeconds * 1000) / 4))
    this.#timer = setInterval(() => void this.sweep(), every)
    ;(this.#timer as { unref?: () => void }).unref?.()
  }

  /** Open sessions on this instance. */
  get size(): number {
    return this.#sessions.size
  }

  /** Answers one request to `/mcp` from an authenticated caller acting in an organization. */
  async handle(request: Request, principal: ControlPlanePrincipal): Promise<Response> {
    this.#closeIdle()
    const caller = callerOf(principal)
    const credential = credentialKey(principal)
    const id = request.headers.get('mcp-session-id')
    if (id !== null) {
      const session = this.#sessions.get(id)
      // Someone else's session id is answered like an unknown one: it must not be usable or confirmable.
      if (!session || session.credential !== credential || session.orgId !== principal.org!.id)
        return rpcError(404, -32001, 'Session not found')
      session.lastSeen = this.deps.now()
      session.lastUse = ++this.#uses
      session.principal = principal
      return this.#forward(session, request, caller)
    }
    if (request.method !== 'POST') return rpcError(400, -32000, 'Bad Request: Mcp-Session-Id header is required')
    if (this.#sessions.size >= this.limits.maxSessions)
      return rpcError(503, -32000, 'Too many MCP sessions on this server; retry shortly', { 'retry-after': '5' })
    const session = this.#create(credential, principal)
    const response = await this.#forward(session, request, caller)
    if (session.transport.sessionId === undefined) {
      // Not an initialize request (the transport answered 400): nothing to keep.
      void session.server.close()
      return response
    }
    this.#sessions.set(session.id, session)
    this.#capCredential(credential, session.id)
    // Follow the feed from the moment the session exists: a change after this reaches the client.
    await session.watch.start(this.changes, session.orgId).catch(() => {})
    return response
  }

  /**
   * Closes idle sessions, and sessions with an open stream whose credential no longer holds (a
   * request would be refused anyway; an open stream must not keep listening). Runs on a timer.
   */
  async sweep(): Promise<void> {
    this.#closeIdle()
    for (const session of [...this.#sessions.values()]) if (session.openStreams > 0) await this.#recheck(session)
  }

  /** Closes the session when its member, role or credential no longer holds. */
  async #recheck(session: McpSession): Promise<void> {
    const p = session.principal
    try {
      if (p.oauth) {
        // The grant (stable across refreshes): revoked, expired, or its member removed ends it.
        if (!(await findActiveOAuthToken(this.deps, p.oauth.tokenId))) this.#close(session)
        return
      }
      const credential = { sessionId: p.session?.id ?? null, apiKeyId: p.apiKeyId }
      if (!(await stillAllowed(this.deps.db, callerOf(p).actor, credential, isoAt(this.deps)))) this.#close(session)
    } catch {
      // The database is unavailable for a moment: the next sweep checks again.
    }
  }

  /** Closes every session (shutdown). */
  close(): void {
    clearInterval(this.#timer)
    for (const session of [...this.#sessions.values()]) this.#close(session)
  }

  #create(credential: string, principal: ControlPlanePrincipal): McpSession {
    const id = randomBytes(24).toString('base64url')
    const events = new MemoryEventStore(this.limits.resumeEvents)
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => id,
      enableJsonResponse: true,
      eventStore: events,
      maxRequestBodySize: this.limits.maxBodyBytes,
    })
    let session!: McpSession
    const who = () => {
      const p = session.principal
      const actor = callerOf(p).actor
      return {
        actor,
        principal: {
          kind: 'member' as const,
          orgId: actor.orgId,
          orgName: p.org!.name,
          userId: actor.userId,
          memberId: actor.memberId,
        },
      }
    }
    const watch = new DeliveryWatch(this.deps, who, {
      listChanged: () => session.server.sendResourceListChanged(),
      updated: (uri) => session.server.sendResourceUpdated({ uri }),
      recheck: () => this.#recheck(session),
    })
    const server = createMcpServer(this.deps, watch, this.limits)
    session = {
      id,
      credential,
      orgId: principal.org!.id,
      principal,
      transport,
      server,
      events,
      watch,
      lastSeen: this.deps.now(),
      lastUse: ++this.#uses,
      openStreams: 0,
      closed: false,
    }
    server.onclose = () => {
      session.closed = true
      watch.close()
      if (this.#sessions.get(id) === session) this.#sessions.delete(id)
    }
    // connect() only wires callbacks and starts the transport (a no-op for HTTP); it never rejects here.
    void server.connect(transport)
    return session
  }

  async #forward(session: McpSession, request: Request, caller: McpCaller): Promise<Response> {
    const response = await session.transport.handleRequest(request, { authInfo: authInfoFor(caller, '') })
    if (request.method !== 'GET' || !response.body || response.status !== 200) return response
    session.openStreams++
    let counted = true
    const body = boundedStream(response.body, {
      maxBufferedBytes: this.limits.maxBufferedBytes,
      onEnd: () => {
        if (!counted) return
        counted = false
        session.openStreams--
        // The stream's end is activity too: the idle clock starts when the client left.
        session.lastSeen = this.deps.now()
      },
    })
    return new Response(body, { status: response.status, headers: response.headers })
  }

  /** Keeps at most the cap of one credential's sessions, closing the least recently used others. */
  #capCredential(credential: string, keep: string): void {
    const mine = [...this.#sessions.values()].filter((s) => s.credential === credential && s.id !== keep)
    const excess = mine.length + 1 - this.limits.maxSessionsPerCredential
    if (excess <= 0) return
    mine.sort((a, b) => a.lastUse - b.lastUse)
    for (const session of mine.slice(0, excess)) this.#close(session)
  }

  #closeIdle(): void {
    const cutoff = this.deps.now() - this.limits.idleSessionSeconds * 1000
    for (const session of this.#sessions.values())
      if (session.openStreams === 0 && session.lastSeen < cutoff) this.#close(session)
  }

  #close(session: McpSession): void {
    if (session.closed) return
    session.closed = true
    this.#sessions.delete(session.id)
    session.watch.close()
    void session.server.close().catch(() => {})
  }
}
