/**
 * Server-Sent Events with resume: {@link followEvents} reads a feed as an async iterator and, when
 * the connection drops (a restart, a proxy timeout, a network change), reconnects with
 * `Last-Event-ID` set to the last event it yielded, so no event is lost or repeated. The feeds
 * number their events (`id:` = seq), so the same id also works after a server restart.
 * @module
 */
import { isErrorBody, ServiceApiError } from './errors.ts'

/** One event: `id` is its seq as a string (null for an event without one), `event` its type. */
export interface ServerSentEvent<T> {
  id: string | null
  event: string
  data: T
}

/** How to follow a feed. */
export interface FollowOptions {
  /** The feed's absolute URL, query included. */
  url: string | URL
  /** Request headers (credentials); a function is called before each connection. */
  headers?: HeadersInit | (() => HeadersInit)
  /** Resume after this event id (e.g. a seq stored from an earlier run). */
  lastEventId?: string | number
  /** Stops the feed; the iterator then ends without an error. */
  signal?: AbortSignal
  /** Wait before reconnecting, unless the server sent `retry:` (default 1 s). */
  reconnectDelayMs?: number
  /** Reconnections in a row without receiving an event before giving up (default 10). */
  maxReconnects?: number
  fetch?: typeof fetch
}

/** Statuses after which reconnecting cannot help: bad credentials, no access, no such feed. */
const FINAL = new Set([400, 401, 403, 404, 405, 410, 422])

/** The blank line that ends an event block. */
const BLOCK_END = /\r?\n\r?\n/

/** Parses one event block (lines of `field: value`); null for comments and heartbeats. */
function parseBlock(block: string): { id?: string; event: string; data: string; retry?: number } | null {
  let event = 'message'
  let id: string | undefined
  let retry: number | undefined
  const data: string[] = []
  let seen = false
  for (const line of block.split(/\r\n|\r|\n/)) {
    if (line === '' || line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    let value = colon < 0 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'data') {
      data.push(value)
      seen = true
    } else if (field === 'event') event = value
    else if (field === 'id' && !value.includes('\0')) id = value
    else if (field === 'retry' && /^\d+$/.test(value)) retry = Number(value)
  }
  return seen ? { id, event, data: data.join('\n'), retry } : retry !== undefined ? { event, data: '', retry } : null
}

function parseData(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}

/**
 * Follows a feed until `signal` aborts, reconnecting with `Last-Event-ID` after a drop. Throws a
 * {@link ServiceApiError} for an answer reconnecting cannot fix (401, 403, 404, …) or after
 * `maxReconnects` failed reconnections in a row.
 */
export async function* followEvents<T>(options: FollowOptions): AsyncGenerator<ServerSentEvent<T>> {
  const doFetch = options.fetch ?? globalThis.fetch
  let lastId = options.lastEventId === undefined ? null : String(options.lastEventId)
  let delay = options.reconnectDelayMs ?? 1000
  const maxReconnects = options.maxReconnects ?? 10
  let failures = 0
  while (!options.signal?.aborted) {
    const headers = new Headers(typeof options.headers === 'function' ? options.headers() : options.headers)
    headers.set('accept', 'text/event-stream')
    if (lastId !== null) headers.set('last-event-id', lastId)
    let response: Response | null = null
    try {
      response = await doFetch(options.url, { headers, signal: options.signal })
    } catch (error) {
      if (options.signal?.aborted) return
      if (++failures > maxReconnects) throw error
    }
    if (response) {
      try {
        if (!response.ok || !(response.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
          const text = await response.text().catch(() => '')
          const body = parseData(text)
          const error = new ServiceApiError(
            response.status,
            isErrorBody(body) ? body : null,
            response.headers.get('x-request-id'),
          )
          if (FINAL.has(response.status) || ++failures > maxReconnects) throw error
        } else if (response.body) {
          let reader: ReadableStreamDefaultReader<string> | undefined
          let buffer = ''
          try {
            // Inside the try: a body that already failed (the connection reset) throws right here.
            reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
            for (;;) {
              const { done, value } = await reader.read()
              if (done) break
              buffer += value
              for (let end = BLOCK_END.exec(buffer); end; end = BLOCK_END.exec(buffer)) {
                const block = buffer.slice(0, end.index)
                buffer = buffer.slice(end.index + end[0].length)
                const parsed = parseBlock(block)
                if (!parsed) continue
                if (parsed.retry !== undefined) delay = parsed.retry
                if (parsed.data === '' && parsed.id === undefined) continue
                if (parsed.id !== undefined) lastId = parsed.id
                failures = 0
                yield { id: parsed.id ?? null, event: parsed.event, data: parseData(parsed.data) as T }
              }
            }
          } finally {
            // Also ends the connection when the caller stops iterating early.
            await reader?.cancel().catch(() => {})
          }
        }
      } catch (error) {
        // A dropped connection (reset, proxy timeout) reconnects; an error answer was decided above.
        if (options.signal?.aborted) return
        if (error instanceof ServiceApiError || ++failures > maxReconnects) throw error
      }
    }
    if (options.signal?.aborted) return
    await new Promise((done) => setTimeout(done, delay))
  }
}
