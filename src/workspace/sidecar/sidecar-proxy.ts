/**
 * Forwards one client request to a workspace's sidecar and relays the answer.
 *
 * Bodies stream both ways (the request body is handed to fetch as a stream, the response is
 * relayed chunk by chunk), redirects are never followed, and every failure has its own code so
 * a client can tell "not configured" from "down" from "slow" from "refused our credentials".
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { StreamRegistry } from '../../core/sse.ts'
import type { Principal } from '../access/auth.ts'
import { relayBody } from './body-relay.ts'
import { ambiguousPath, pinnedUpstreamUrl, sessionIdInPath, upstreamRelativePath } from './directory-pin.ts'
import { heartbeatFrameFor, relayEventStream } from './event-stream-relay.ts'
import { basicAuthorization, downstreamResponseHeaders, upstreamRequestHeaders } from './header-policy.ts'
import { filteredResponse } from './result-filter.ts'
import { secretMaskedResponse } from './secret-mask.ts'
import { seesConfigSecrets } from '../config/config-secret-view.ts'
import { pinBody, pinQueryPaths, pinTailPath, readPinnedBody } from './request-pins.ts'
import { assertSidecarAllowed, type Classified, classifySidecarRequest } from './route-policy.ts'
import type { SidecarRouteEntry } from './route-table.ts'
import type { SessionGuard } from './session-guard.ts'
import type { SidecarTarget, SidecarTuning } from '../config/sidecar-config.ts'
import { canonicalDirectory } from './session-guard.ts'
import { sidecarFetch, unreachable } from './upstream-fetch.ts'
import { workspaceError } from '../workspace-errors.ts'

/** One request to forward. */
export interface ProxyInput {
  request: Request
  /** The raw (still percent-encoded) path after the mount, e.g. `/session/ses_1/message`. */
  rest: string
  /** The client's raw query string including `?`, or ''. */
  search: string
  workspaceId: string
  target: SidecarTarget
  principal: Principal
  requestId: string
  /** The allow-list row whose declaration matched, or null for the host-only fallback. */
  entry: SidecarRouteEntry | null
}

/** Governance hooks for state-changing rows (wired to the approval gate and audit log). */
export interface ProxyGovernance {
  /** Asks the host; resolves when allowed, throws 403 `write_denied` otherwise. */
  approve(input: {
    workspaceId: string
    principal: Principal
    action: string
    summary: string
    signal: AbortSignal
  }): Promise<void>
  /** Records a governed call and its upstream status. */
  audit(input: { workspaceId: string; principal: Principal; action: string; summary: string }): void
}

/** What the proxy needs besides the request. */
export interface ProxyContext {
  tuning: SidecarTuning
  readOnly: boolean
  streams: StreamRegistry
  log: Logger
  guard: (baseUrl: string) => SessionGuard
  governance?: ProxyGovernance
  /** Handles an allow-listed WebSocket row (upgrade or ticket) instead of a plain forward. */
  socket?: (input: ProxyInput, classified: Classified, url: URL) => Promise<Response>
}

const NO_BODY_METHODS = new Set(['GET', 'HEAD'])
/**
 * Responses that declare a length up to this size are read in one go: a stream wrapper per small
 * JSON answer cost a third of the proxy's throughput, and nothing is gained by streaming 64 KiB.
 */
const SMALL_BODY_BYTES = 64 * 1024
const EVENT_PATHS = new Set(['/event', '/global/event', '/api/event'])

function isEventStreamType(contentType: string | null): boolean {
  return (contentType ?? '').toLowerCase().startsWith('text/event-stream')
}

/** The file a read names (its `path` query or its tail), for deciding whether it is the config. */
function askedPath(entry: SidecarRouteEntry, classified: Classified, url: URL): string | null {
  if (entry.tailPath) return Object.values(classified.params).at(-1) ?? null
  return url.searchParams.get('path')
}

/** Forwards `input` and returns the client response, or throws an ApiError. */
export async function forwardToSidecar(input: ProxyInput, ctx: ProxyContext): Promise<Response> {
  const { request, target } = input
  const method = request.method.toUpperCase()
  if (!target.baseUrl) throw unreachable(input.rest, 'starting', 'The managed sidecar is not running yet')
  const url = pinnedUpstreamUrl(target.baseUrl, input.rest, input.search, target.directory)
  if (!url) throw workspaceError('not_found', 'Not found')
  const path = upstreamRelativePath(url, target.baseUrl)
  const ambiguous = ambiguousPath(path)
  if (ambiguous) throw workspaceError('invalid_sidecar_path', `The sidecar path is ambiguous (${ambiguous})`)
  // The row is found again from the path the sidecar will route (normalised, any letter case); a
  // request whose declaration and upstream path disagree is treated as unlisted (host only).
  let classified = classifySidecarRequest(method, path)
  if (input.entry && classified?.entry !== input.entry) classified = null
  assertSidecarAllowed({ method, path, classified, principal: input.principal, readOnly: ctx.readOnly })
  const entry = classified?.entry
  if (entry?.queryPaths) pinQueryPaths(url.search, entry.queryPaths, target.directory)
  if (entry?.tailPath && classified) {
    const tail = Object.values(classified.params).at(-1) ?? ''
    pinTailPath(tail, target.directory)
  }

  const sessionId = sessionIdInPath(path)
  if (sessionId) await assertOwnSession(sessionId, input, ctx)
  let forwardBody: BodyInit | null = NO_BODY_METHODS.has(method) ? null : request.body
  if (entry?.body && !NO_BODY_METHODS.has(method)) {
    const json = await readPinnedBody(request)
    if (json) {
      for (const id of pinBody(json, entry.body, target.directory)) await assertOwnSession(id, input, ctx)
      forwardBody = JSON.stringify(json)
    } else forwardBody = null
  }
  if (entry && classified && entry.kind === 'websocket') {
    if (!ctx.socket) throw workspaceError('websocket_upgrade_required', 'This route needs a WebSocket upgrade')
    return ctx.socket(input, classified, url)
  }
  if (entry && classified && ctx.socket && /(^|\.)connectToken$/.test(entry.operationId))
    return ctx.socket(input, classified, url)
  const governed = entry?.governance
  const action = entry ? `sidecar.${entry.operationId}` : `sidecar.unlisted`
  const summary = `${method} ${path} through the sidecar proxy`
  if (governed === 'approval' && ctx.governance) {
    await ctx.governance.approve({
      workspaceId: input.workspaceId,
      principal: input.principal,
      action,
      summary,
      signal: request.signal,
    })
  }
  const audited = !!governed || (!entry && !NO_BODY_METHODS.has(method))
  const authorization = basicAuthorization(target.username, target.password)

  const isEvents =
    method === 'GET' &&
    (EVENT_PATHS.has(path.toLowerCase()) || (request.headers.get('accept') ?? '').includes('text/event-stream'))
  const upstream = new AbortController()
  // Until the sidecar answers, a client abort (or, on Deno, the end of the exchange) cancels the request;
  // afterwards the relay's cancel() is the disconnect hook.
  const onClientAbort = () => upstream.abort()
  if (request.signal.aborted) throw workspaceError('request_aborted', 'Client closed the request')
  request.signal.addEventListener('abort', onClientAbort, { once: true })
  const timeoutMs = isEvents ? ctx.tuning.eventEstablishTimeoutMs : ctx.tuning.responseTimeoutMs
  let timedOut = false
  const timer = setTimeout(() => {
    timedOut = true
    upstream.abort()
  }, timeoutMs)
  let response: Response
  try {
    response = await fetch(url, {
      method,
      headers: upstreamRequestHeaders(request.headers, {
        authorization,
        directory: target.directory,
        requestId: input.requestId,
      }),
      body: forwardBody,
      duplex: 'half',
      redirect: 'manual',
      signal: upstream.signal,
    } as RequestInit)
  } catch (error) {
    if (request.signal.aborted && !timedOut) throw workspaceError('request_aborted', 'Client closed the request')
    if (timedOut) throw unreachable(path, 'timeout', `The sidecar did not answer within ${timeoutMs} ms`)
    throw unreachable(path, (error as { code?: string }).code ?? 'connection_failed', (error as Error).message)
  } finally {
    clearTimeout(timer)
    request.signal.removeEventListener('abort', onClientAbort)
  }

  if (audited && ctx.governance) {
    ctx.governance.audit({
      workspaceId: input.workspaceId,
      principal: input.principal,
      action,
      summary: `${summary}: sidecar answered ${response.status}`,
    })
  }
  if (response.status >= 300 && response.status < 400 && response.status !== 304) {
    await response.body?.cancel().catch(() => {})
    throw workspaceError(
      'sidecar_redirect_refused',
      'The sidecar answered with a redirect, which the proxy does not follow',
      { details: { path, status: response.status } },
    )
  }
  if (response.status === 401) {
    await response.body?.cancel().catch(() => {})
    throw workspaceError('sidecar_auth_failed', 'The sidecar rejected the configured sidecar credentials', {
      details: { path, status: 401 },
    })
  }

  const headers = downstreamResponseHeaders(response.headers)
  if (entry?.secrets && classified && !seesConfigSecrets(input.principal)) {
    const shown = entry.filterResults
      ? await filteredResponse(response, target.directory, new Headers(response.headers))
      : response
    return secretMaskedResponse(entry.secrets, shown, target.directory, headers, askedPath(entry, classified, url))
  }
  if (entry?.filterResults) return filteredResponse(response, target.directory, headers)
  if (!response.body || response.status === 204 || response.status === 304) {
    return new Response(null, { status: response.status, headers })
  }
  const log = ctx.log
  const logAbort = () =>
    log.info('request aborted', {
      requestId: input.requestId,
      status: 499,
      code: 'request_aborted',
      path: `sidecar${path}`,
      workspaceId: input.workspaceId,
    })
  if (isEventStreamType(response.headers.get('content-type'))) {
    headers.set('cache-control', 'no-cache, no-transform')
    headers.set('x-accel-buffering', 'no')
    const body = relayEventStream(response.body, {
      heartbeatMs: ctx.tuning.heartbeatMs,
      heartbeatFrame: heartbeatFrameFor(path),
      registry: ctx.streams,
      onClientCancel: () => {
        upstream.abort()
        logAbort()
      },
      onUpstreamEnd: (reason) => {
        if (reason === 'dropped')
          log.warn('sidecar event stream dropped', { requestId: input.requestId, path, workspaceId: input.workspaceId })
      },
      keepFrame: /^\/(global|api)\/event$/i.test(path) ? ownDirectoryOnly(target.directory) : undefined,
    })
    return new Response(body, { status: response.status, headers })
  }
  const declared = Number(response.headers.get('content-length') ?? NaN)
  if (Number.isFinite(declared) && declared <= SMALL_BODY_BYTES && !response.headers.has('content-encoding')) {
    const bytes = await readSmallBody(response, upstream, ctx.tuning.bodyIdleTimeoutMs, () =>
      log.warn('sidecar response body failed', { requestId: input.requestId, path, workspaceId: input.workspaceId }),
    )
    return new Response(bytes, { status: response.status, headers })
  }
  const body = relayBody(response.body, {
    idleTimeoutMs: ctx.tuning.bodyIdleTimeoutMs,
    onClientCancel: () => {
      upstream.abort()
      logAbort()
    },
    onUpstreamError: (reason) => {
      upstream.abort()
      log.warn('sidecar response body failed', {
        requestId: input.requestId,
        path,
        reason,
        workspaceId: input.workspaceId,
      })
    },
  })
  return new Response(body, { status: response.status, headers })
}

/**
 * 404 `session_not_found` unless `sessionId` belongs to the workspace. OpenCode answers for any
 * session whatever the pinned directory, so the session's own directory is looked up (cached).
 * An id the sidecar does not know passes: the sidecar answers its own 404.
 */
async function assertOwnSession(sessionId: string, input: ProxyInput, ctx: ProxyContext): Promise<void> {
  const { target, request } = input
  const ownership = await ctx.guard(target.baseUrl!).check(sessionId, target.directory, async () => {
    const lookup = await sidecarFetch(target, `/session/${encodeURIComponent(sessionId)}`, {
      timeoutMs: ctx.tuning.eventEstablishTimeoutMs,
      signal: request.signal,
    })
    if (lookup.status === 404 || lookup.status === 400) {
      await lookup.body?.cancel()
      return null
    }
    if (!lookup.ok) {
      await lookup.body?.cancel()
      throw workspaceError('sidecar_request_failed', 'The sidecar could not look up the session', {
        details: { status: lookup.status },
      })
    }
    const info = (await lookup.json().catch(() => null)) as { directory?: unknown } | null
    return typeof info?.directory === 'string' ? info.directory : null
  })
  if (ownership === 'foreign') throw workspaceError('session_not_found', 'Session not found')
}

/** Reads a small, length-declared body whole, within the idle deadline; a failure is a 502. */
async function readSmallBody(
  response: Response,
  upstream: AbortController,
  timeoutMs: number,
  onFailure: () => void,
): Promise<ArrayBuffer> {
  const timer = setTimeout(() => upstream.abort(), timeoutMs)
  try {
    return await response.arrayBuffer()
  } catch {
    onFailure()
    throw workspaceError('sidecar_response_failed', 'The sidecar response body failed before it was complete', {
      details: { status: response.status },
    })
  } finally {
    clearTimeout(timer)
  }
}

/**
 * `/global/event` carries every directory's events in a `{directory, payload}` envelope; a
 * workspace's clients only see their own directory's and directory-less (server-wide) ones.
 */
function ownDirectoryOnly(directory: string): (data: string) => boolean {
  const own = canonicalDirectory(directory)
  return (data) => {
    let event: { directory?: unknown }
    try {
      event = JSON.parse(data) as { directory?: unknown }
    } catch {
      return false
    }
    return (
      typeof event?.directory !== 'string' ||
      event.directory === directory ||
      canonicalDirectory(event.directory) === own
    )
  }
}
