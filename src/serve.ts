/**
 * Runtime seam for HTTP serving: the only file (with `storage/open-sqlite.ts`) that names Bun or Deno.
 *
 * Why a seam: both runtimes take a Fetch handler, but differ on idle timeouts, shutdown and how to
 * learn the bound port. Everything above this file is runtime-neutral Request → Response code.
 * @module
 */

import type { PeerLookup } from './core/peer-address.ts'
import { type GuardStats, RequestGuard } from './core/request-guard.ts'
import { REQUEST_LIMIT_DEFAULTS, type RequestLimits } from './core/request-limits.ts'

declare const Bun: any
declare const Deno: any

/** A running listener. `stop()` force-closes open connections (streams are closed by the app first). */
export interface Listener {
  readonly host: string
  readonly port: number
  /** The request guard's counters: requests in progress, refused by the caps, bodies timed out. */
  stats(): GuardStats
  stop(): Promise<void>
}

/** Options for {@link serve}. `port: 0` asks the OS for an ephemeral port. */
export interface ServeOptions {
  host: string
  port: number
  /** The handler; `peer` looks up the TCP peer address lazily (only throttles need it). */
  fetch: (request: Request, peer: PeerLookup) => Response | Promise<Response>
  /**
   * GETs (and HEADs) on these exact paths may be answered by the runtime's own router, before the
   * request guard (they are uncapped paths) and `fetch`; other methods and paths still reach `fetch`.
   */
  direct?: ReadonlyArray<{ path: string; fetch(request: Request): Response | Promise<Response> }>
  /** Deadlines and caps (defaults: {@link REQUEST_LIMIT_DEFAULTS}). */
  limits?: RequestLimits
}

/** A WebSocket the listener accepted, in runtime-neutral form (see {@link upgradeOf}). */
export interface ServerSocket {
  send(data: string | Uint8Array): void
  /** Closes with `code` and `reason`; a code the runtime may not send is replaced by 1000. */
  close(code?: number, reason?: string): void
  /** Bytes queued for the client and not yet written. */
  readonly bufferedAmount: number
  /** Sends a ping frame (Deno pings by itself after the idle time given at upgrade: a no-op there). */
  ping(): void
}

/** What the app does with an accepted WebSocket; `drain` is called when the send queue empties (Bun only). */
export interface SocketHandler {
  open(socket: ServerSocket): void
  message(data: string | Uint8Array): void
  close(code: number, reason: string): void
  drain?(): void
}

/** Upgrades the request it was attached to; returns the response to hand back, or null when it cannot. */
export type UpgradeHook = (handler: SocketHandler, options: { idleSeconds: number }) => Response | null

const UPGRADE = Symbol('service.upgrade')

/** The listener's upgrade hook for `request`, when it asked for a WebSocket over a real listener. */
export function upgradeOf(request: Request): UpgradeHook | undefined {
  return (request as unknown as Record<symbol, UpgradeHook | undefined>)[UPGRADE]
}

function wantsWebSocket(request: Request): boolean {
  return request.method === 'GET' && request.headers.get('upgrade')?.toLowerCase() === 'websocket'
}

function offerUpgrade(request: Request, hook: UpgradeHook): void {
  ;(request as unknown as Record<symbol, UpgradeHook>)[UPGRADE] = hook
}

/** Event streams keep their connection open on purpose; they send heartbeats instead. */
function isEventStream(response: Response): boolean {
  return response.headers.get('content-type')?.startsWith('text/event-stream') ?? false
}

/** True when running on Bun (used by the SQLite seam too, re-derived there to keep seams independent). */
export const runtimeName: 'bun' | 'deno' | 'node' =
  typeof Bun !== 'undefined' ? 'bun' : typeof Deno !== 'undefined' ? 'deno' : 'node'

/** Quiet time after the last request before memory is given back; see {@link idleShrinker}. */
const IDLE_SHRINK_MS = 500

/** Quiet time after which compiled code is given back too; see {@link idleShrinker}. */
const LONG_IDLE_SHRINK_MS = 60_000

/**
 * Gives memory back once the server goes quiet (Bun). JavaScriptCore collects when code allocates,
 * so the garbage of a burst of requests (and of start-up) stays on the heap, its pages resident,
 * until the next burst; a desktop server is quiet most of the time. Once nothing has arrived for
 * `delayMs` after a burst, a full collection returns the burst's garbage to the OS (measured
 * 2026-11-25: about 3.5 MB less idle RSS and 8 MB less after the bench's load run).
 *
 * Two strengths, because `Bun.shrink()` also throws away every function's compiled code (measured
 * 2026-11-27: a hot loop ran at its cold speed again after it), so a server that paused for half a
 * second between bursts compiled its request path again at the start of each one, and the compiler
 * threads' work showed in the CPU per request. So: after start-up, whose code runs once, `shrink()`;
 * after a burst of requests, a full collection that keeps compiled code (`Bun.gc(true)`); and
 * `shrink()` again only once nothing has arrived for `longDelayMs`, when the code is worth less
 * than its memory. No timer runs while the server stays quiet, and at most one per `delayMs` while
 * it is busy. Returns the function to call on every request.
 */
export function idleShrinker(options: {
  delayMs: number
  longDelayMs: number
  /** A full collection that keeps compiled code. */
  collect?: () => void
  /** A full collection that also discards compiled code and returns free pages. */
  shrink?: () => void
}): () => void {
  if (typeof Bun === 'undefined' || typeof Bun.shrink !== 'function') return () => {}
  const { delayMs, longDelayMs, collect = () => Bun.gc(true), shrink = () => Bun.shrink() } = options
  let requests = 0
  let seen = 0
  let started = false
  let timer: ReturnType<typeof setTimeout> | undefined
  const later = (fn: () => void, ms: number) => {
    const handle = setTimeout(fn, ms)
    ;(handle as { unref?: () => void }).unref?.()
    return handle
  }
  const arm = () => {
    seen = requests
    timer = later(check, delayMs)
  }
  /** Runs `give` now and once more shortly after, unless a request comes first. */
  const giveBack = (give: () => void) => {
    give()
    // The collection finishes sweeping after it returns; a second pass shortly after gives back
    // what it freed late (about 1.5 MB more after the load run).
    const quiet = requests
    later(() => requests === quiet && give(), 100)
  }
  const check = () => {
    if (requests !== seen) return arm()
    timer = undefined
    if (!started) {
      started = true
      return giveBack(shrink)
    }
    giveBack(collect)
    const quiet = requests
    later(() => requests === quiet && shrink(), longDelayMs)
  }
  const activity = () => {
    requests++
    if (!timer) arm()
  }
  // Start-up is a burst too: its garbage goes once the first requests are answered.
  activity()
  return activity
}

/**
 * Ends the start-up phase: a compiled binary starts with JavaScriptCore's tier-up thresholds
 * raised (build.ts, `--compile-jit-policy`) so run-once start-up code stays in the interpreter;
 * from here on the normal policy applies. Called once the listener is bound, and by one-shot
 * commands (which are work, not start-up) before they run. A no-op from source and on Deno.
 */
export function startupFinished(): void {
  if (runtimeName === 'bun') Bun.unsafe?.setJITPolicy?.(1)
}

/** Starts listening and resolves once the socket is bound. */
export async function serve(options: ServeOptions): Promise<Listener> {
  const limits = options.limits ?? REQUEST_LIMIT_DEFAULTS
  const guard = new RequestGuard(limits)
  if (runtimeName === 'bun') {
    // Bun's idleTimeout is not reset by request body bytes (an honest slow upload is cut once it
    // passes), and the default 10 s cuts quiet event streams. So each request is exempted while it
    // is in progress (the guard's body deadline covers stalled bodies), and once its answer is
    // ready the idle timeout applies again: to the response being read and to the keep-alive wait
    // after it. Event streams stay exempt. Headers are bounded by Bun itself (about 10 s, not
    // configurable; measured on Bun 1.4.5 with a header trickled one byte a second).
    // Bun refuses bodies over 128 MiB by default, before our handler sees them; every route enforces
    // its own limit (JSON bodies, inbox uploads, proxied streams), so the listener must not.
    const idle = limits.idleTimeoutSeconds
    const active = idleShrinker({ delayMs: IDLE_SHRINK_MS, longDelayMs: LONG_IDLE_SHRINK_MS })
    const server = Bun.serve({
      hostname: options.host,
      port: options.port,
      idleTimeout: idle,
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      // Bun's router hands a GET (and a HEAD, whose body it drops) on exactly these paths to its
      // handler; other methods and other spellings of the path go to fetch. A body-less GET needs no
      // guard; an answer still being worked on is exempt from the idle timeout like any other.
      routes: Object.fromEntries(
        (options.direct ?? []).map(({ path, fetch }) => [
          path,
          {
            GET: (request: Request, bun: any) => {
              active()
              const result = fetch(request)
              if (!(result instanceof Promise)) return result
              bun.timeout(request, 0)
              return result.then((response) => {
                bun.timeout(request, idle)
                return response
              })
            },
          },
        ]),
      ),
      fetch: (request: Request, bun: any) => {
        active()
        // The peer address is looked up only when something asks (the guard's caps, a route that
        // logs it): /health and the other uncapped paths never pay for it.
        const peer = () => bun.requestIP(request)?.address
        // After a successful server.upgrade Bun wants `undefined` back, whatever the app answered.
        let upgraded = false
        const settle = (response: Response) => {
          if (upgraded) return undefined
          bun.timeout(request, isEventStream(response) ? 0 : idle)
          return response
        }
        const incoming = {
          request,
          get address() {
            return peer()
          },
        }
        const result = guard.handle(incoming, (guarded) => {
          if (wantsWebSocket(request))
            offerUpgrade(guarded, (handler) => {
              if (!bun.upgrade(request, { data: handler })) return null
              upgraded = true
              return new Response(null)
            })
          return options.fetch(guarded, peer)
        })
        if (!(result instanceof Promise)) return settle(result)
        // Exempt from the idle timeout while the answer is in progress. Set before control returns
        // to the event loop, so it holds before any byte of a body is read.
        bun.timeout(request, 0)
        return result.then(settle)
      },
      // Bun pings idle sockets itself (sendPings) and closes those that stop answering.
      websocket: {
        idleTimeout: 120,
        open: (ws: any) => ws.data.open(bunSocket(ws)),
        message: (ws: any, data: string | Uint8Array) => ws.data.message(data),
        close: (ws: any, code: number, reason: string) => ws.data.close(code, reason),
        drain: (ws: any) => ws.data.drain?.(),
      },
    })
    startupFinished()
    return {
      host: options.host,
      port: server.port as number,
      stats: () => guard.stats(),
      // A graceful stop lets just-closed streams flush their last bytes; the forced stop after it
      // guarantees we never hang on a connection (stop() alone waits on an open SSE forever).
      stop: async () => {
        await Promise.race([server.stop(false), new Promise((resolve) => setTimeout(resolve, 500))])
        await server.stop(true)
      },
    }
  }
  if (runtimeName === 'deno') {
    const controller = new AbortController()
    let resolveListen!: (port: number) => void
    const listening = new Promise<number>((resolve) => {
      resolveListen = resolve
    })
    const server = Deno.serve(
      {
        hostname: options.host,
        port: options.port,
        signal: controller.signal,
        onListen: (addr: { port: number }) => resolveListen(addr.port),
      },
      // Deno.serve has no timeouts and cannot close a connection from a handler: a stalled body is
      // answered 408 by the guard (its handler released, temp files removed), but the socket stays
      // open until the client closes it. Keep-alive and header deadlines are the runtime's (none).
      (request: Request, info: { remoteAddr?: { hostname?: string } }) => {
        const peer = () => info?.remoteAddr?.hostname
        // Deno wants its own 101 response back, whatever the app's pipeline made of it.
        let upgraded: Response | undefined
        const result = guard.handle({ request, address: peer() }, (guarded) => {
          if (wantsWebSocket(request))
            offerUpgrade(guarded, (handler, { idleSeconds }) => {
              upgraded = denoUpgrade(request, handler, idleSeconds) ?? undefined
              return upgraded ?? null
            })
          return options.fetch(guarded, peer)
        })
        return result instanceof Promise ? result.then((r) => upgraded ?? r) : (upgraded ?? result)
      },
    )
    const port = await listening
    return {
      host: options.host,
      port,
      stats: () => guard.stats(),
      // shutdown() waits for open streams; aborting the signal closes them at once.
      stop: async () => {
        controller.abort()
        await server.finished
      },
    }
  }
  throw new Error('service-server needs Bun or Deno to serve HTTP')
}

/** Close codes a WebSocket API may send (RFC 6455 §7.4; the WHATWG API allows only these). */
function sendableCode(code: number | undefined): number | undefined {
  return code === undefined || code === 1000 || (code >= 3000 && code <= 4999) ? code : 1000
}

function bunSocket(ws: any): ServerSocket {
  return {
    send: (data) => ws.send(data),
    // Bun's server sockets may send the protocol codes too; the reserved ones never go on the wire.
    close: (code, reason) => ws.close(code === 1005 || code === 1006 || code === 1015 ? 1011 : code, reason),
    get bufferedAmount() {
      return ws.getBufferedAmount() as number
    },
    ping: () => ws.ping(),
  }
}

function denoUpgrade(request: Request, handler: SocketHandler, idleSeconds: number): Response | null {
  let upgrade: { socket: WebSocket; response: Response }
  try {
    upgrade = Deno.upgradeWebSocket(request, { idleTimeout: idleSeconds })
  } catch {
    return null
  }
  const { socket } = upgrade
  socket.binaryType = 'arraybuffer'
  const wrapped: ServerSocket = {
    send: (data) => socket.send(data),
    close: (code, reason) => socket.close(sendableCode(code), reason),
    get bufferedAmount() {
      return socket.bufferedAmount
    },
    ping: () => {},
  }
  socket.onopen = () => handler.open(wrapped)
  socket.onmessage = (event) =>
    handler.message(typeof event.data === 'string' ? event.data : new Uint8Array(event.data as ArrayBuffer))
  socket.onclose = (event) => handler.close(event.code, event.reason)
  return upgrade.response
}
