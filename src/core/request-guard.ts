/**
 * Holds the listener up under slow or hostile clients, identically on Bun and Deno.
 *
 * Why in the application and not the runtime: Deno.serve has no timeouts at all, and Bun's
 * `idleTimeout` is not reset by request body bytes (measured on Bun 1.4.5: an upload sending 64 KiB
 * every 400 ms was cut after the idle timeout), so it would cut slow but honest uploads. The guard
 * therefore enforces an idle deadline on request bodies itself (a read that waits longer than the
 * deadline fails, and the request is answered 408 with `Connection: close`), and caps the requests
 * in progress per client address and in total (503 with `Retry-After`), so a few hundred stalled
 * bodies cannot take every file descriptor. `/health` is never capped: it is what a supervisor
 * asks when everything else is refused. A body the route leaves unread is read and dropped (up to
 * 8 MiB) before the answer goes out, and a GET or HEAD with a large body is refused 413, so an answer
 * is never cut short by a connection closed while the request was still arriving.
 * @module
 */
import { type ApiError, errorResponse } from './errors.ts'
import type { RequestLimits } from './request-limits.ts'
import { coreError } from './core-errors.ts'
import { requestIdOf } from './request-id.ts'

/** Paths that bypass the caps (cheap, unauthenticated, and what an orchestrator probes). */
const UNCAPPED_PATHS = new Set(['/health'])

/** The most a request body its route does not read may carry; it is read and dropped (see `drained`). */
export const MAX_UNREAD_BODY_BYTES = 8 * 1024 * 1024

/** The most content a GET or HEAD may carry; it is ignored (see `unreadableBody`). */
export const MAX_GET_BODY_BYTES = 64 * 1024

/** Seconds a refused client is told to wait before retrying. */
const RETRY_AFTER_SECONDS = 2

/** The error a body read fails with once the client has sent nothing for the idle deadline. */
export class BodyIdleTimeoutError extends Error {
  constructor(seconds: number) {
    super(`request body idle for ${seconds} s`)
    this.name = 'BodyIdleTimeoutError'
  }
}

/** What the guard needs from the listener for one request. */
export interface GuardedRequest {
  request: Request
  /** The TCP peer address, when the runtime knows it. */
  address: string | undefined
}

/** Counters exposed for tests and status output. */
export interface GuardStats {
  inFlight: number
  refused: number
  bodyTimeouts: number
}

/** Our error shape, closing the connection (the client is misbehaving or we are full). */
function refusal(request: Request, error: ApiError): Response {
  const response = errorResponse(error)
  response.headers.set('x-request-id', requestIdOf(request))
  response.headers.set('x-content-type-options', 'nosniff')
  response.headers.set('connection', 'close')
  return response
}

/** The path of an absolute request URL without building a URL object (this runs on every request). */
function pathOf(href: string): string {
  const scheme = href.indexOf('://')
  if (scheme < 0) return href
  const slash = href.indexOf('/', scheme + 3)
  if (slash < 0) return '/'
  let end = href.length
  for (const mark of ['?', '#']) {
    const at = href.indexOf(mark, slash)
    if (at >= 0 && at < end) end = at
  }
  return href.slice(slash, end)
}

/**
 * True when a GET or HEAD carries more than {@link MAX_GET_BODY_BYTES} of content, or content of
 * unknown length. Why: Bun hands the application no body for these methods and, answering with
 * `Connection: close`, closes the socket while that body is still arriving, which cut the answer
 * short (a 2 MiB body truncated a 200 at 128 KB). A small refusal goes out whole; a small body
 * fits the socket buffers and is ignored as before.
 */
function unreadableBody(request: Request): boolean {
  const length = request.headers.get('content-length')
  if (length !== null) return Number(length) > MAX_GET_BODY_BYTES
  return request.headers.has('transfer-encoding')
}

/** True when the request carries a body the handler may read. */
function hasBody(request: Request): boolean {
  if (request.body === null) return false
  const length = request.headers.get('content-length')
  return length === null ? request.headers.has('transfer-encoding') : length !== '0'
}

/**
 * Wraps a request body so that a read waiting longer than `seconds` fails. Only time spent waiting
 * on the client counts: a handler that pauses between reads (waiting for approval, say) is not the
 * client's fault.
 */
function idleLimitedBody(
  body: ReadableStream<Uint8Array>,
  seconds: number,
  onTimeout: () => void,
): ReadableStream<Uint8Array> {
  const reader = body.getReader()
  let timer: ReturnType<typeof setTimeout> | undefined
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        return new Promise<void>((resolve) => {
          let expired = false
          timer = setTimeout(() => {
            expired = true
            // The 408 is settled before the handler sees its read fail, so the answer is ours.
            onTimeout()
            controller.error(new BodyIdleTimeoutError(seconds))
            reader.cancel().catch(() => {})
            resolve()
          }, seconds * 1000)
          reader.read().then(
            ({ done, value }) => {
              clearTimeout(timer)
              if (expired) return
              if (done) controller.close()
              else controller.enqueue(value)
              resolve()
            },
            (error) => {
              clearTimeout(timer)
              if (!expired) controller.error(error)
              resolve()
            },
          )
        })
      },
      cancel(reason) {
        clearTimeout(timer)
        return reader.cancel(reason)
      },
    },
    { highWaterMark: 0 },
  )
}

/** A handler wrapper enforcing {@link RequestLimits}; one per listener. */
export class RequestGuard {
  private inFlight = 0
  private readonly perAddress = new Map<string, number>()
  private refused = 0
  private bodyTimeouts = 0

  constructor(private readonly limits: RequestLimits) {}

  /** Counts a request in progress for `address`; returns its release, which runs at most once. */
  private take(address: string): () => void {
    this.inFlight++
    this.perAddress.set(address, (this.perAddress.get(address) ?? 0) + 1)
    let released = false
    return () => {
      if (released) return
      released = true
      this.inFlight--
      const left = (this.perAddress.get(address) ?? 1) - 1
      if (left <= 0) this.perAddress.delete(address)
      else this.perAddress.set(address, left)
    }
  }

  /**
   * `response`, once the body its handler left unread has been read and dropped; a 413 when that
   * body is over {@link MAX_UNREAD_BODY_BYTES}. Why: with `Connection: close` the runtime closes
   * the socket once the answer is written, while request bytes may still be arriving; the answer
   * was cut short (a DELETE carrying 2 MiB got 128 KB of a 600 KB answer). Reading the rest first
   * (bounded, and under the body idle deadline) lets the answer arrive whole.
   */
  private async drained(request: Request, guarded: Request, response: Response): Promise<Response> {
    const body = guarded.body
    if (!body || guarded.bodyUsed || body.locked) return response
    const declared = Number(request.headers.get('content-length') ?? '0')
    let size = 0
    let over = declared > MAX_UNREAD_BODY_BYTES
    if (!over) {
      const reader = body.getReader()
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        size += value.byteLength
        if (size > MAX_UNREAD_BODY_BYTES) {
          over = true
          reader.cancel().catch(() => {})
          break
        }
      }
    } else body.cancel().catch(() => {})
    if (!over) return response
    response.body?.cancel().catch(() => {})
    return refusal(
      request,
      coreError(
        'payload_too_large',
        `This route reads no request body; at most ${MAX_UNREAD_BODY_BYTES} bytes are skipped`,
        {
          details: { maxBytes: MAX_UNREAD_BODY_BYTES, size: Math.max(size, declared) },
        },
      ),
    )
  }

  /** Current counters. */
  stats(): GuardStats {
    return { inFlight: this.inFlight, refused: this.refused, bodyTimeouts: this.bodyTimeouts }
  }

  /**
   * Runs `next` for the request unless a cap refuses it; answers 408 when its body stalls. The
   * returned response is the handler's, or the guard's own refusal or timeout.
   */
  handle(
    incoming: GuardedRequest,
    next: (request: Request) => Response | Promise<Response>,
  ): Response | Promise<Response> {
    const { request } = incoming
    if (UNCAPPED_PATHS.has(pathOf(request.url))) return next(request)
    if ((request.method === 'GET' || request.method === 'HEAD') && unreadableBody(request)) {
      return refusal(
        request,
        coreError(
          'payload_too_large',
          `${request.method} takes no request body (at most ${MAX_GET_BODY_BYTES} bytes are ignored)`,
          {
            details: { maxBytes: MAX_GET_BODY_BYTES },
          },
        ),
      )
    }
    // The peer address costs a system call (getpeername), so it is asked for only when it can
    // matter: a caller can be at its own cap only once that many requests are in flight at all.
    let address: string | undefined
    if (this.inFlight >= this.limits.maxRequestsPerAddress) address = incoming.address ?? 'unknown'
    const held = address === undefined ? 0 : (this.perAddress.get(address) ?? 0)
    if (held >= this.limits.maxRequestsPerAddress || this.inFlight >= this.limits.maxRequests) {
      this.refused++
      request.body?.cancel().catch(() => {})
      return refusal(
        request,
        coreError('server_busy', 'Too many requests in progress; retry shortly', {
          headers: { 'retry-after': String(RETRY_AFTER_SECONDS) },
          details: { retryAfterSeconds: RETRY_AFTER_SECONDS },
        }),
      )
    }

    if (!hasBody(request)) {
      // A request answered synchronously never overlaps another one (nothing else runs until it
      // returns), so it takes its slot only if it goes on to wait.
      const result = next(request)
      if (!(result instanceof Promise)) return result
      return result.finally(this.take(address ?? incoming.address ?? 'unknown'))
    }

    let timedOut!: (response: Response) => void
    const deadline = new Promise<Response>((resolve) => {
      timedOut = resolve
    })
    const release = this.take(address ?? incoming.address ?? 'unknown')
    const seconds = this.limits.bodyIdleTimeoutSeconds
    const guarded = new Request(request, {
      body: idleLimitedBody(request.body as ReadableStream<Uint8Array>, seconds, () => {
        this.bodyTimeouts++
        // The slot is free once we answer: the handler only has cleanup left to do.
        release()
        timedOut(
          refusal(
            request,
            coreError('request_timeout', `The request body stopped arriving for ${seconds} s`, {
              details: { bodyIdleTimeoutSeconds: seconds },
            }),
          ),
        )
      }),
      signal: request.signal,
      duplex: 'half',
    } as RequestInit)
    let handled: Promise<Response>
    try {
      handled = Promise.resolve(next(guarded))
    } catch (error) {
      release()
      throw error
    }
    // The handler may still be cleaning up (removing a temp upload) after the 408 went out; its
    // eventual answer or failure has nobody to go to.
    handled.then(release, release)
    return Promise.race([handled.then((response) => this.drained(request, guarded, response)), deadline])
  }
}
