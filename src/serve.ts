/**
 * Runtime seam for HTTP serving: the only file (with `storage/open-sqlite.ts`) that names Bun or Deno.
 *
 * Why a seam: both runtimes take a Fetch handler, but differ on idle timeouts, shutdown and how to
 * learn the bound port. Everything above this file is runtime-neutral Request → Response code.
 * @module
 */

import type { PeerLookup } from './core/peer-address.ts'

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
}

/** True when running on Bun (used by the SQLite seam too, re-derived there to keep seams independent). */
export const runtimeName: 'bun' | 'deno' | 'node' =
  typeof Bun !== 'undefined' ? 'bun' : typeof Deno !== 'undefined' ? 'deno' : 'node'

/** Starts listening and resolves once the socket is bound. */
export async function serve(options: ServeOptions): Promise<Listener> {
  if (runtimeName === 'bun') {
    // Bun 1.4 defaults idleTimeout to 10 s, which cuts quiet event streams; 0 disables it.
    // Bun refuses bodies over 128 MiB by default, before our handler sees them; every route enforces
    // its own limit (JSON bodies, inbox uploads, proxied streams), so the listener must not.
    const server = Bun.serve({
      hostname: options.host,
      port: options.port,
      idleTimeout: 0,
      maxRequestBodySize: Number.MAX_SAFE_INTEGER,
      fetch: (request: Request, bun: any) => options.fetch(request, () => bun.requestIP(request)?.address),
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
      (request: Request, info: { remoteAddr?: { hostname?: string } }) =>
        options.fetch(request, () => info?.remoteAddr?.hostname),
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
