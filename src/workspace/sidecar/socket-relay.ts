/**
 * Relays allow-listed WebSocket routes (OpenCode's terminal) between a client and the sidecar, and
 * answers the terminal connect-token routes with our own browser tickets.
 *
 * The request has passed the same authentication, allow-list and pinning as any proxied request
 * before it gets here. The sidecar is connected first, so a refusal (unknown terminal, sidecar down)
 * is an ordinary HTTP error and the client is only upgraded to a socket that works. Then messages
 * pass one at a time: the sidecar is read only while the client's send queue is below
 * {@link HIGH_WATER_BYTES} (backpressure), close codes and reasons cross in both directions, both
 * sides are pinged every {@link PING_MS}, each token holds at most {@link MAX_SOCKETS_PER_TOKEN}
 * relayed sockets, and shutdown closes every relay with 1001.
 * @module
 */
import type { StreamRegistry } from '../../core/sse.ts'
import { type ServerSocket, upgradeOf } from '../../serve.ts'
import type { Principal } from '../access/auth.ts'
import { basicAuthorization, directoryHeaderValue } from './header-policy.ts'
import type { Classified } from './route-policy.ts'
import type { SidecarTuning } from '../config/sidecar-config.ts'
import type { ProxyInput } from './sidecar-proxy.ts'
import type { SocketTickets } from './socket-tickets.ts'
import type { UpstreamSocket } from './upstream-socket.ts'
import { sidecarFetch, unreachable } from './upstream-fetch.ts'
import { workspaceError } from '../workspace-errors.ts'
import { lazyModule } from '../../core/lazy-module.ts'

// The upstream client (node:net, node:tls) is loaded by the first relayed socket: most servers never
// relay one, and those modules cost every process resident memory.
const upstreamSocket = lazyModule(() => import('./upstream-socket.ts'))

/** Most relayed sockets one token (or the host token) may hold open at once. */
export const MAX_SOCKETS_PER_TOKEN = 8
/** Idle ping interval, both directions. */
export const PING_MS = 30_000
/** Stop reading the sidecar while this much is queued for the client; resume below a quarter of it. */
export const HIGH_WATER_BYTES = 256 * 1024
/** A client that sends faster than the sidecar reads is closed (1013) past this much queued upstream. */
const MAX_UPSTREAM_QUEUE_BYTES = 4 * 1024 * 1024
/** Messages the sidecar sends before the client socket is open (the terminal's replay) are held up to this. */
const MAX_EARLY_BYTES = 4 * 1024 * 1024

function sizeOf(data: string | Uint8Array): number {
  return typeof data === 'string' ? data.length * 3 : data.byteLength
}

/** Who a relayed socket counts against. */
function holderOf(principal: Principal): string {
  return principal.tokenHash ?? `${principal.type}:${principal.tokenId ?? ''}`
}

/** Code to send the sidecar: the client's own, except the reserved ones that never go on the wire. */
function upstreamCode(code: number): number {
  return code === 1005 || code === 1006 || code === 1015 ? 1000 : code
}

/** Code for the client: a lost sidecar (1006) is an internal error (1011); no status (1005) is a normal close. */
function clientCode(code: number): number {
  if (code === 1006) return 1011
  if (code === 1005) return 1000
  return code
}

/** The relay of one server. */
export class SocketRelay {
  readonly #open = new Map<string, number>()

  constructor(
    private readonly deps: {
      tuning: SidecarTuning
      streams: StreamRegistry
      tickets: SocketTickets
      log: { info(message: string, fields?: Record<string, unknown>): void }
    },
  ) {}

  /** Open relayed sockets per holder (for tests and status). */
  openCount(principal: Principal): number {
    return this.#open.get(holderOf(principal)) ?? 0
  }

  /** Handles a WebSocket row or a connect-token row; `url` is the pinned upstream URL. */
  handle = (input: ProxyInput, classified: Classified, url: URL): Promise<Response> => {
    if (classified.entry.kind === 'websocket') return this.#relay(input, url)
    return this.#ticket(input, classified)
  }

  /** A connect-token row: checks the terminal exists in this workspace, then issues our own ticket. */
  async #ticket(input: ProxyInput, classified: Classified): Promise<Response> {
    const ptyId = classified.params.ptyID ?? ''
    const lookup = await sidecarFetch(input.target, `/pty/${encodeURIComponent(decodeURIComponent(ptyId))}`, {
      timeoutMs: this.deps.tuning.eventEstablishTimeoutMs,
      signal: input.request.signal,
    })
    await lookup.body?.cancel().catch(() => {})
    if (lookup.status === 404) throw workspaceError('not_found', 'The sidecar has no such terminal')
    if (lookup.status === 401)
      throw workspaceError('sidecar_auth_failed', 'The sidecar rejected the configured sidecar credentials')
    if (!lookup.ok)
      throw workspaceError('sidecar_request_failed', 'The sidecar could not look up the terminal', {
        details: { status: lookup.status },
      })
    const path = input.rest.replace(/\/connect-token\/?$/i, '/connect')
    const issued = this.deps.tickets.issue({ workspaceId: input.workspaceId, path, principal: input.principal })
    return Response.json({ ticket: issued.ticket, expires_in: Math.floor(issued.expiresInMs / 1000) })
  }

  async #relay(input: ProxyInput, url: URL): Promise<Response> {
    const upgrade = upgradeOf(input.request)
    if (!upgrade) throw workspaceError('websocket_upgrade_required', 'This route needs a WebSocket upgrade')
    const holder = holderOf(input.principal)
    const held = this.#open.get(holder) ?? 0
    if (held >= MAX_SOCKETS_PER_TOKEN) {
      throw workspaceError('sidecar_socket_limit', `At most ${MAX_SOCKETS_PER_TOKEN} relayed sockets per token`, {
        details: { limit: MAX_SOCKETS_PER_TOKEN },
      })
    }
    this.#open.set(holder, held + 1)
    let released = false
    const release = () => {
      if (released) return
      released = true
      const left = (this.#open.get(holder) ?? 1) - 1
      if (left <= 0) this.#open.delete(holder)
      else this.#open.set(holder, left)
    }

    // Our ticket was for us; the sidecar is authenticated with its own credentials instead.
    const upstreamUrl = new URL(url)
    upstreamUrl.searchParams.delete('ticket')
    const headers: Record<string, string> = {
      'x-opencode-directory': directoryHeaderValue(input.target.directory),
      'x-request-id': input.requestId,
    }
    const authorization = basicAuthorization(input.target.username, input.target.password)
    if (authorization) headers.authorization = authorization

    let client: ServerSocket | null = null
    let early: Array<string | Uint8Array> | null = []
    let earlyBytes = 0
    let paused = false
    let ended = false
    let pinger: ReturnType<typeof setInterval> | undefined
    let poller: ReturnType<typeof setInterval> | undefined
    let unregister = () => {}
    const fields = { requestId: input.requestId, workspaceId: input.workspaceId, path: upstreamUrl.pathname }

    const end = (how: string, code: number) => {
      if (ended) return
      ended = true
      clearInterval(pinger)
      clearInterval(poller)
      unregister()
      release()
      this.deps.log.info('sidecar socket closed', { ...fields, by: how, code })
    }
    const resumeWhenDrained = () => {
      if (!paused || !client || client.bufferedAmount > HIGH_WATER_BYTES / 4) return
      paused = false
      clearInterval(poller)
      upstream?.resume()
    }

    let upstream: UpstreamSocket | undefined
    let UpgradeRefused: typeof import('./upstream-socket.ts').UpgradeRefused | undefined
    try {
      const loaded = await upstreamSocket()
      UpgradeRefused = loaded.UpgradeRefused
      upstream = await loaded.openUpstreamSocket(
        upstreamUrl,
        headers,
        {
          message: (data) => {
            if (!client) {
              earlyBytes += sizeOf(data)
              if (early && earlyBytes <= MAX_EARLY_BYTES) early.push(data)
              return
            }
            client.send(data)
            if (!paused && client.bufferedAmount > HIGH_WATER_BYTES) {
              paused = true
              upstream?.pause()
              // Deno reports no drain event: poll the queue while paused.
              poller = setInterval(resumeWhenDrained, 25)
            }
          },
          close: (code, reason) => {
            client?.close(clientCode(code), reason)
            end('sidecar', code)
          },
        },
        this.deps.tuning.eventEstablishTimeoutMs,
      )
    } catch (error) {
      release()
      if (UpgradeRefused && error instanceof UpgradeRefused) {
        if (error.status === 401)
          throw workspaceError('sidecar_auth_failed', 'The sidecar rejected the configured sidecar credentials')
        throw workspaceError('sidecar_socket_refused', 'The sidecar refused the WebSocket', {
          status: error.status === 404 ? 404 : 502,
          details: { status: error.status },
        })
      }
      throw unreachable(
        upstreamUrl.pathname,
        (error as { code?: string }).code ?? 'connection_failed',
        (error as Error).message,
      )
    }
    const sidecar = upstream
    // Nothing more is read from the sidecar until the client socket is open.
    sidecar.pause()
    const response = upgrade(
      {
        open: (socket) => {
          client = socket
          for (const data of early ?? []) socket.send(data)
          early = null
          if (earlyBytes > MAX_EARLY_BYTES) {
            socket.close(1009, 'terminal replay too big')
            sidecar.close(1000, 'client refused')
            end('server', 1009)
            return
          }
          sidecar.resume()
          pinger = setInterval(() => {
            socket.ping()
            sidecar.ping()
          }, PING_MS)
          this.deps.log.info('sidecar socket opened', fields)
        },
        message: (data) => {
          sidecar.send(data)
          if (sidecar.buffered > MAX_UPSTREAM_QUEUE_BYTES) {
            client?.close(1013, 'the sidecar is not reading fast enough')
            sidecar.close(1000, 'client closed')
            end('backpressure', 1013)
          }
        },
        close: (code, reason) => {
          sidecar.close(upstreamCode(code), reason)
          end('client', code)
        },
        drain: resumeWhenDrained,
      },
      { idleSeconds: PING_MS / 1000 },
    )
    if (!response) {
      sidecar.close(1000, 'client upgrade failed')
      end('server', 1000)
      throw workspaceError('websocket_upgrade_failed', 'The WebSocket upgrade failed')
    }
    unregister = this.deps.streams.add(() => {
      client?.close(1001, 'server shutting down')
      sidecar.close(1001, 'server shutting down')
      end('shutdown', 1001)
    })
    return response
  }
}
