/**
 * Runtime seam for HTTP serving: the only file (with `storage/open-sqlite.ts`) that names Bun or Deno.
 *
 * Why a seam: both runtimes take a Fetch handler, but differ on idle timeouts, shutdown and how to
 * learn the bound port. Everything above this file is runtime-neutral Request → Response code.
 * @module
 */

import type { PeerLookup } from './core/peer-address.ts'
import { RequestGuard } from './core/request-guard.ts'
import { REQUEST_LIMIT_DEFAULTS, type RequestLimits } from './core/request-limits.ts'

declare const Bun: any
declare const Deno: any

/** A running listener. `stop()` force-closes open connections (streams are closed by the app first). */
export interface Listener {
  readonly host: string
  readonly port: number
  stop(): Promise<void>
}

/** Options for {@link serve}. `port: 0` asks the OS for an ephemeral port. */
export interface ServeOptions {
  host: string
  port: number
  /** The handler; `peer` looks up the TCP peer address lazily (only throttles need it). */
  fetch: (request: Request, peer: PeerLookup) => Response | Promise<Response>
  /** Deadlines and caps (defaults: {@link REQUEST_LIMIT_DEFAULTS}). */
  limits?: RequestLimits
}

/** Event streams keep their connection open on purpose; they send heartbeats instead. */
function isEventStream(response: Response): boolean {
  return response.headers.get('content-type')?.startsWith('text/event-stream') ?? false
}

/** True when running on Bun (used by the SQLite seam too, re-derived there to keep seams independent). */
export const runtimeName: 'bun' | 'deno' | 'node' =
  typeof Bun !== 'undefined' ? 'bun' : typeof Deno !== 'undefined' ? 'deno' : 'node'

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
    const server = Bun.serve({
      hostname: options.host,
      port: options.port,
      idleTimeout: idle,
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      fetch: (request: Request, bun: any) => {
        bun.timeout(request, 0)
        const peer = () => bun.requestIP(request)?.address
        const settle = (response: Response) => {
          if (!isEventStream(response)) bun.timeout(request, idle)
          return response
        }
        const result = guard.handle({ request, address: peer() }, (guarded) => options.fetch(guarded, peer))
        return result instanceof Promise ? result.then(settle) : settle(result)
      },
    })
    return {
      host: options.host,
      port: server.port as number,
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
        return guard.handle({ request, address: peer() }, (guarded) => options.fetch(guarded, peer))
      },
    )
    const port = await listening
    return {
      host: options.host,
      port,
      // shutdown() waits for open streams; aborting the signal closes them at once.
      stop: async () => {
        controller.abort()
        await server.finished
      },
    }
  }
  throw new Error('service-server needs Bun or Deno to serve HTTP')
}
