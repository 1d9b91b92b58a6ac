/**
 * A WebSocket client to the sidecar over a plain TCP (or TLS) socket.
 *
 * Why not the runtime's `WebSocket`: it cannot send our Basic credentials as a header (the sidecar
 * would need a ticket dance per connection), cannot stop reading when the client we relay to is slow
 * (no backpressure: every frame the sidecar sends would pile up in memory), and cannot send a close
 * code outside 1000/3000–4999. Over the raw socket the relay reads only as fast as the client drains,
 * and frames pass one at a time. Fragmented messages are joined (the client side's WebSocket API only
 * sends whole messages), up to {@link MAX_MESSAGE_BYTES}.
 * @module
 */
import { createHash, randomBytes } from 'node:crypto'
import { connect as connectTcp, type Socket } from 'node:net'
import { connect as connectTls } from 'node:tls'

/** Largest message relayed; a bigger one closes both sides with 1009 (message too big). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024
const GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
const MAX_HANDSHAKE_BYTES = 64 * 1024

/** Events of an open upstream socket. */
export interface UpstreamEvents {
  message(data: string | Uint8Array): void
  /** The sidecar closed (its code and reason), or the connection was lost (1006). Called once. */
  close(code: number, reason: string): void
}

/** An open connection to the sidecar. */
export interface UpstreamSocket {
  send(data: string | Uint8Array): void
  ping(): void
  /** Starts the closing handshake; the socket is destroyed if the sidecar does not answer within 2 s. */
  close(code: number, reason: string): void
  /** Stops reading from the sidecar (backpressure) until {@link resume}. */
  pause(): void
  resume(): void
  /** Bytes written to the kernel buffer's queue but not yet sent. */
  readonly buffered: number
}

/** The sidecar refused the upgrade: its HTTP status (and the first bytes of its body, never shown to clients). */
export class UpgradeRefused extends Error {
  constructor(readonly status: number) {
    super(`the sidecar answered ${status} instead of 101`)
  }
}

function frame(opcode: number, payload: Uint8Array): Buffer {
  const length = payload.length
  const header = length < 126 ? 2 : length < 65536 ? 4 : 10
  const out = Buffer.allocUnsafe(header + 4 + length)
  out[0] = 0x80 | opcode
  if (length < 126) out[1] = 0x80 | length
  else if (length < 65536) {
    out[1] = 0x80 | 126
    out.writeUInt16BE(length, 2)
  } else {
    out[1] = 0x80 | 127
    out.writeBigUInt64BE(BigInt(length), 2)
  }
  // Clients must mask every frame (RFC 6455 §5.3).
  const mask = randomBytes(4)
  mask.copy(out, header)
  for (let i = 0; i < length; i++) out[header + 4 + i] = payload[i]! ^ mask[i & 3]!
  return out
}

function closePayload(code: number, reason: string): Uint8Array {
  const text = Buffer.from(reason.slice(0, 100))
  const out = Buffer.allocUnsafe(2 + text.length)
  out.writeUInt16BE(code, 0)
  text.copy(out, 2)
  return out
}

/**
 * Opens `url` (http/https, upgraded to WebSocket) with `headers`; resolves once the sidecar answered
 * 101, rejects with {@link UpgradeRefused} for any other status, or with the connection error.
 */
export function openUpstreamSocket(
  url: URL,
  headers: Record<string, string>,
  events: UpstreamEvents,
  timeoutMs: number,
): Promise<UpstreamSocket> {
  const secure = url.protocol === 'https:'
  const port = Number(url.port || (secure ? 443 : 80))
  const host = url.hostname.replace(/^\[|\]$/g, '')
  const key = randomBytes(16).toString('base64')
  const expectedAccept = createHash('sha1')
    .update(key + GUID)
    .digest('base64')
  const tcp: Socket = secure ? connectTls({ host, port, servername: host }) : connectTcp({ host, port })
  tcp.setNoDelay(true)

  return new Promise<UpstreamSocket>((resolve, reject) => {
    let handshake: Buffer = Buffer.alloc(0)
    let open = false
    let closed = false
    let closing: ReturnType<typeof setTimeout> | undefined
    let pending: Buffer = Buffer.alloc(0)
    let fragments: Buffer[] = []
    let fragmentBytes = 0
    let fragmentText = false
    const timer = setTimeout(() => fail(new Error(`no upgrade answer within ${timeoutMs} ms`)), timeoutMs)

    const fail = (error: Error) => {
      clearTimeout(timer)
      tcp.destroy()
      if (!open) reject(error)
    }
    const finish = (code: number, reason: string) => {
      if (closed) return
      closed = true
      clearTimeout(closing)
      tcp.destroy()
      events.close(code, reason)
    }
    const write = (opcode: number, payload: Uint8Array) => {
      if (!closed && !tcp.destroyed) tcp.write(frame(opcode, payload))
    }
    const sendClose = (code: number, reason: string) => {
      write(0x8, closePayload(code, reason))
      closing ??= setTimeout(() => finish(code, reason), 2000)
    }

    const onFrames = () => {
      for (;;) {
        if (pending.length < 2) return
        const fin = (pending[0]! & 0x80) !== 0
        const opcode = pending[0]! & 0x0f
        const masked = (pending[1]! & 0x80) !== 0
        let length = pending[1]! & 0x7f
        let offset = 2
        if (length === 126) {
          if (pending.length < 4) return
          length = pending.readUInt16BE(2)
          offset = 4
        } else if (length === 127) {
          if (pending.length < 10) return
          const big = pending.readBigUInt64BE(2)
          if (big > BigInt(MAX_MESSAGE_BYTES)) return tooBig()
          length = Number(big)
          offset = 10
        }
        if (length > MAX_MESSAGE_BYTES) return tooBig()
        const maskOffset = offset
        if (masked) offset += 4
        if (pending.length < offset + length) return
        const payload = Buffer.from(pending.subarray(offset, offset + length))
        if (masked) for (let i = 0; i < length; i++) payload[i]! ^= pending[maskOffset + (i & 3)]!
        pending = pending.subarray(offset + length)
        if (opcode === 0x8) {
          const code = payload.length >= 2 ? payload.readUInt16BE(0) : 1005
          const reason = payload.length > 2 ? payload.subarray(2).toString('utf8') : ''
          if (!closing) write(0x8, payload.length >= 2 ? payload.subarray(0, 2) : new Uint8Array())
          finish(code, reason)
          return
        }
        if (opcode === 0x9) {
          write(0xa, payload)
          continue
        }
        if (opcode === 0xa) continue
        if (opcode === 0x1 || opcode === 0x2) {
          fragmentText = opcode === 0x1
          fragments = []
          fragmentBytes = 0
        } else if (opcode !== 0x0) {
          sendClose(1002, 'unknown opcode')
          return
        }
        fragmentBytes += payload.length
        if (fragmentBytes > MAX_MESSAGE_BYTES) return tooBig()
        if (!fin) {
          fragments.push(payload)
          continue
        }
        const whole = fragments.length ? Buffer.concat([...fragments, payload]) : payload
        fragments = []
        fragmentBytes = 0
        events.message(fragmentText ? whole.toString('utf8') : new Uint8Array(whole))
      }
    }
    const tooBig = () => {
      sendClose(1009, 'message too big')
      finish(1009, 'message too big')
    }

    const socket: UpstreamSocket = {
      send: (data) => write(typeof data === 'string' ? 0x1 : 0x2, typeof data === 'string' ? Buffer.from(data) : data),
      ping: () => write(0x9, new Uint8Array()),
      close: (code, reason) => sendClose(code, reason),
      pause: () => tcp.pause(),
      resume: () => tcp.resume(),
      get buffered() {
        return tcp.writableLength
      },
    }

    tcp.on('data', (chunk: Buffer) => {
      if (open) {
        pending = pending.length ? Buffer.concat([pending, chunk]) : chunk
        onFrames()
        return
      }
      handshake = Buffer.concat([handshake, chunk])
      const end = handshake.indexOf('\r\n\r\n')
      if (end < 0) {
        if (handshake.length > MAX_HANDSHAKE_BYTES) fail(new Error('oversized upgrade answer'))
        return
      }
      const head = handshake.subarray(0, end).toString('latin1').split('\r\n')
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(head[0] ?? '')?.[1] ?? 0)
      const accept = head
        .slice(1)
        .find((line) => line.toLowerCase().startsWith('sec-websocket-accept:'))
        ?.slice(21)
        .trim()
      if (status !== 101) return fail(new UpgradeRefused(status))
      if (accept !== expectedAccept) return fail(new Error('the sidecar answered with a wrong Sec-WebSocket-Accept'))
      clearTimeout(timer)
      open = true
      resolve(socket)
      pending = handshake.subarray(end + 4)
      if (pending.length) onFrames()
    })
    tcp.on('error', (error) => (open ? finish(1006, 'sidecar connection lost') : fail(error)))
    tcp.on('close', () => (open ? finish(1006, 'sidecar connection lost') : fail(new Error('connection closed'))))
    // Writes before the connection (and TLS handshake) completes are queued by the socket.
    const lines = [
      `GET ${url.pathname}${url.search} HTTP/1.1`,
      `Host: ${url.host}`,
      'Upgrade: websocket',
      'Connection: Upgrade',
      `Sec-WebSocket-Key: ${key}`,
      'Sec-WebSocket-Version: 13',
      ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    ]
    tcp.write(`${lines.join('\r\n')}\r\n\r\n`)
  })
}
