/**
 * A small client of the Docker Engine API (the versioned `/v1.41/…` paths, which Docker and
 * Podman's compatible service both answer), over a unix socket or TCP with optional TLS. Only
 * what the `container` provisioner needs: JSON requests, a tar upload and the log stream.
 *
 * Every request has a deadline; a connection that cannot be made (socket missing, refused,
 * timed out) is an {@link EngineUnreachable}, which callers treat as a state, not a crash.
 * Response bodies are never logged: container inspect output names the image's environment.
 * @module
 */
import { readFileSync } from 'node:fs'
import { request as httpRequest, type IncomingMessage, type RequestOptions } from 'node:http'
import { request as httpsRequest } from 'node:https'
import type { Readable } from 'node:stream'

/** The API version requested; Podman 4 and Docker 20.10+ answer it. */
export const ENGINE_API_VERSION = 'v1.41'

/** Bound on a JSON answer read into memory. */
const MAX_BODY_BYTES = 8 * 1024 * 1024

/** Where the engine listens, and the TLS files for a TCP endpoint. */
export interface EngineEndpoint {
  /** `unix:///run/podman/podman.sock`, `tcp://host:2376` or `http(s)://host:port`. */
  url: string
  tls?: { ca?: string; cert?: string; key?: string } | null
}

/** The engine could not be reached (a state that is retried, never a crash). */
export class EngineUnreachable extends Error {
  override name = 'EngineUnreachable'
}

/** The engine answered with an error status. */
export class EngineError extends Error {
  override name = 'EngineError'
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message)
  }
}

/** An answer of the engine. */
export interface EngineResponse {
  status: number
  body: Buffer
}

/** Client of one engine endpoint. */
export class DockerEngine {
  readonly #base: RequestOptions
  readonly #tls: boolean
  readonly #timeoutMs: number

  constructor(endpoint: EngineEndpoint, options: { timeoutMs?: number } = {}) {
    this.#timeoutMs = options.timeoutMs ?? 30_000
    const url = endpoint.url
    if (url.startsWith('unix://')) {
      this.#base = { socketPath: url.slice('unix://'.length) }
      this.#tls = false
      return
    }
    const parsed = new URL(url.replace(/^tcp:\/\//, endpoint.tls ? 'https://' : 'http://'))
    this.#tls = parsed.protocol === 'https:'
    const read = (path?: string) => (path ? readFileSync(path) : undefined)
    this.#base = {
      host: parsed.hostname.replace(/^\[|\]$/g, ''),
      port: Number(parsed.port || (this.#tls ? 2376 : 2375)),
      ...(this.#tls
        ? { ca: read(endpoint.tls?.ca), cert: read(endpoint.tls?.cert), key: read(endpoint.tls?.key) }
        : {}),
    } as RequestOptions
  }

  /** Sends one request; `body` is JSON (object), raw bytes, or a stream; resolves with the whole answer. */
  async request(
    method: string,
    path: string,
    body?: unknown,
    options: { contentType?: string; timeoutMs?: number } = {},
  ): Promise<EngineResponse> {
    const response = await this.#send(method, path, body, options)
    const chunks: Buffer[] = []
    let size = 0
    for await (const chunk of response) {
      size += chunk.length
      if (size > MAX_BODY_BYTES) {
        response.destroy()
        throw new EngineError(502, `the engine's answer to ${method} ${path.split('?')[0]} is too large`)
      }
      chunks.push(chunk)
    }
    return { status: response.statusCode ?? 0, body: Buffer.concat(chunks) }
  }

  /** Like {@link request}, parsing JSON and failing on statuses outside `ok` (default 2xx). */
  async json<T>(
    method: string,
    path: string,
    body?: unknown,
    options: { ok?: number[]; contentType?: string; timeoutMs?: number } = {},
  ): Promise<{ status: number; value: T | null }> {
    const response = await this.request(method, path, body, options)
    const ok = options.ok ?? []
    if ((response.status < 200 || response.status > 299) && !ok.includes(response.status)) {
      let message = ''
      try {
        message = String((JSON.parse(response.body.toString('utf8')) as { message?: string }).message ?? '')
      } catch {
        message = response.body.toString('utf8').slice(0, 200)
      }
      throw new EngineError(
        response.status,
        `the engine refused ${method} ${path.split('?')[0]} (${response.status}): ${message.slice(0, 300)}`,
      )
    }
    const text = response.body.toString('utf8').trim()
    return { status: response.status, value: text ? (JSON.parse(text) as T) : null }
  }

  #send(
    method: string,
    path: string,
    body: unknown,
    options: { contentType?: string; timeoutMs?: number },
  ): Promise<IncomingMessage> {
    const timeoutMs = options.timeoutMs ?? this.#timeoutMs
    const headers: Record<string, string> = { host: 'docker' }
    let payload: Buffer | Readable | undefined
    if (body instanceof Buffer) payload = body
    else if (body && typeof (body as Readable).pipe === 'function') payload = body as Readable
    else if (body !== undefined) payload = Buffer.from(JSON.stringify(body))
    // Raw bytes and streams are tar archives (uploads, image loads); anything else is JSON.
    const raw = body instanceof Buffer || (payload !== undefined && !(payload instanceof Buffer))
    if (payload !== undefined)
      headers['content-type'] = options.contentType ?? (raw ? 'application/x-tar' : 'application/json')
    if (payload instanceof Buffer) headers['content-length'] = String(payload.length)
    const send = this.#tls ? httpsRequest : httpRequest
    return new Promise((resolve, reject) => {
      let answered = false
      const req = send({ ...this.#base, method, path: `/${ENGINE_API_VERSION}${path}`, headers }, (response) => {
        answered = true
        resolve(response)
      })
      const timer = setTimeout(() => {
        req.destroy(new EngineUnreachable(`the container engine did not answer within ${timeoutMs} ms`))
      }, timeoutMs)
      req.once('close', () => clearTimeout(timer))
      req.once('error', (error) => {
        clearTimeout(timer)
        if (answered) return
        reject(
          error instanceof EngineUnreachable
            ? error
            : new EngineUnreachable(
                `the container engine is unreachable: ${(error as NodeJS.ErrnoException).code ?? error.message}`,
              ),
        )
      })
      if (payload instanceof Buffer) req.end(payload)
      else if (payload) (payload as Readable).pipe(req)
      else req.end()
    })
  }
}

/**
 * Splits a log answer into lines. Without a TTY the engine multiplexes stdout and stderr in
 * frames of an 8-byte header (stream, 0, 0, 0, big-endian length) and the payload; with a TTY
 * (or an engine that does not frame) the body is the raw output.
 */
export function logLines(body: Buffer, tty = false): string[] {
  const framed = !tty && body.length >= 8 && body[0]! <= 2 && body[1] === 0 && body[2] === 0 && body[3] === 0
  let text = ''
  if (framed) {
    const parts: Buffer[] = []
    let offset = 0
    while (offset + 8 <= body.length) {
      const size = body.readUInt32BE(offset + 4)
      parts.push(body.subarray(offset + 8, Math.min(body.length, offset + 8 + size)))
      offset += 8 + size
    }
    text = Buffer.concat(parts).toString('utf8')
  } else text = body.toString('utf8')
  const lines = text.split('\n')
  if (lines.at(-1) === '') lines.pop()
  return lines.map((line) => line.replace(/\r$/, ''))
}
