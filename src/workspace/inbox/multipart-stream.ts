/**
 * A streaming `multipart/form-data` reader over a request body stream. `request.formData()`
 * buffers the whole body (a 200 MB upload would sit in memory); this reader hands each file part
 * to its consumer chunk by chunk as the bytes arrive, keeping only a boundary's length of
 * look-behind, so memory stays flat whatever the upload size.
 * @module
 */
import type { ApiError } from '../../core/errors.ts'
import { workspaceError } from '../workspace-errors.ts'

/** A part's headers as the consumer sees them. */
export interface PartInfo {
  name: string
  filename?: string
  contentType?: string
}

/**
 * A bound on the whole body, framing and every part included (ignored parts too): once more than
 * `bytes` have been read, reading stops and `error(read)` is thrown.
 */
export interface BodyLimit {
  bytes: number
  error(read: number): Error
}

/** What to do with each part: small fields are collected; file parts are streamed. */
export interface MultipartHandlers {
  onField(name: string, value: string): void
  onFile(info: PartInfo, data: AsyncIterable<Uint8Array>): Promise<void>
}

const MAX_HEADER_BYTES = 16 * 1024
const MAX_FIELD_BYTES = 64 * 1024
const CRLF2 = Buffer.from('\r\n\r\n')

function malformed(message: string): ApiError {
  return workspaceError('invalid_payload', `Malformed multipart body: ${message}`)
}

/** The boundary of a `multipart/form-data` content type, or null when it is not one. */
export function multipartBoundary(contentType: string | null): string | null {
  if (!contentType || !/^multipart\/form-data\s*(;|$)/i.test(contentType.trim())) return null
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;]{1,70}))/i.exec(contentType)
  return match ? (match[1] ?? match[2]!) : null
}

function dispositionParam(header: string, key: string): string | undefined {
  const star = new RegExp(`;\\s*${key}\\*=(?:UTF-8|utf-8)''([^;]+)`).exec(header)
  if (star) {
    try {
      return decodeURIComponent(star[1]!.trim())
    } catch {
      /* fall back to the plain form */
    }
  }
  const quoted = new RegExp(`;\\s*${key}="((?:[^"\\\\]|\\\\.)*)"`).exec(header)
  if (quoted) return quoted[1]!.replace(/\\(.)/g, '$1')
  const bare = new RegExp(`;\\s*${key}=([^;\\s]+)`).exec(header)
  return bare?.[1]
}

class BodyReader {
  buf: Buffer
  #done = false
  #read = 0
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly #limit: BodyLimit | undefined

  constructor(stream: ReadableStream<Uint8Array>, initial: Buffer, limit?: BodyLimit) {
    this.#reader = stream.getReader()
    this.buf = initial
    this.#limit = limit
  }

  async more(): Promise<boolean> {
    const chunk = await this.#next()
    if (chunk === null) return false
    this.buf = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk
    return true
  }

  /** Reads until `needle`; returns the bytes before it and drops the needle. */
  async until(needle: Buffer, max: number, what: string): Promise<Buffer> {
    for (;;) {
      const i = this.buf.indexOf(needle)
      if (i >= 0) {
        const out = this.buf.subarray(0, i)
        this.buf = this.buf.subarray(i + needle.length)
        return out
      }
      if (this.buf.length > max + needle.length) throw malformed(`${what} too long`)
      if (!(await this.more())) throw malformed(`unexpected end while reading ${what}`)
    }
  }

  async need(n: number): Promise<void> {
    while (this.buf.length < n) if (!(await this.more())) throw malformed('unexpected end of body')
  }

  /** The next raw chunk of the body, or null at its end. */
  async #next(): Promise<Buffer | null> {
    if (this.#done) return null
    const { value, done } = await this.#reader.read()
    if (done) {
      this.#done = true
      return null
    }
    this.#read += value.byteLength
    if (this.#limit && this.#read > this.#limit.bytes) throw this.#limit.error(this.#read)
    return Buffer.from(value.buffer, value.byteOffset, value.byteLength)
  }

  /**
   * Yields body bytes up to (not including) `delimiter`, which is left at the start of the buffer.
   * Chunks are yielded as views of what the runtime delivered, without copying: only a
   * delimiter's length at each chunk junction is copied to look for a delimiter split across two
   * chunks.
   */
  async *data(delimiter: Buffer): AsyncGenerator<Uint8Array> {
    const keep = delimiter.length - 1
    for (;;) {
      const i = this.buf.indexOf(delimiter)
      if (i >= 0) {
        if (i > 0) yield this.buf.subarray(0, i)
        this.buf = this.buf.subarray(i)
        return
      }
      const cut = Math.max(0, this.buf.length - keep)
      if (cut > 0) yield this.buf.subarray(0, cut)
      const tail = this.buf.subarray(cut)
      const next = await this.#next()
      if (next === null) throw malformed('unexpected end inside a part')
      if (next.length < keep) {
        // Too short to rule out a delimiter starting in the tail: search the two together.
        this.buf = Buffer.concat([tail, next])
        continue
      }
      const junction = Buffer.concat([tail, next.subarray(0, keep)])
      const j = junction.indexOf(delimiter)
      if (j >= 0 && j < tail.length) {
        if (j > 0) yield tail.subarray(0, j)
        this.buf = Buffer.concat([tail.subarray(j), next])
        return
      }
      // No delimiter starts in the tail, so it is data; continue in the new chunk alone.
      if (tail.length) yield Buffer.from(tail)
      this.buf = next
    }
  }

  cancel(): void {
    this.#reader.cancel().catch(() => {})
  }
}

/**
 * Reads a multipart body, calling the handlers in part order. Throws 400 `invalid_payload` when
 * malformed, and `limit.error` as soon as the body grows past `limit.bytes`.
 */
export async function readMultipart(
  body: ReadableStream<Uint8Array> | null,
  boundary: string,
  handlers: MultipartHandlers,
  limit?: BodyLimit,
): Promise<void> {
  if (!body) throw malformed('empty body')
  // Reading as if the body began with CRLF lets the first boundary match the part delimiter.
  const reader = new BodyReader(body, Buffer.from('\r\n'), limit)
  const delimiter = Buffer.from(`\r\n--${boundary}`)
  try {
    await reader.until(delimiter, 64 * 1024, 'preamble')
    for (;;) {
      await reader.need(2)
      if (reader.buf[0] === 0x2d && reader.buf[1] === 0x2d) return // closing boundary `--`
      await reader.until(Buffer.from('\r\n'), 256, 'boundary line')
      const head = (await reader.until(CRLF2, MAX_HEADER_BYTES, 'part headers')).toString('utf8')
      const headers = new Map<string, string>()
      for (const line of head.split('\r\n')) {
        const colon = line.indexOf(':')
        if (colon > 0) headers.set(line.slice(0, colon).trim().toLowerCase(), line.slice(colon + 1).trim())
      }
      const disposition = headers.get('content-disposition') ?? ''
      if (!/^form-data\b/i.test(disposition)) throw malformed('part without form-data disposition')
      const name = dispositionParam(disposition, 'name') ?? ''
      const filename = dispositionParam(disposition, 'filename')
      if (filename !== undefined) {
        const data = reader.data(delimiter)
        await handlers.onFile({ name, filename, contentType: headers.get('content-type') }, data)
        // Drain whatever the consumer left (it may ignore a part).
        for await (const _ of data) {
          /* discard */
        }
      } else {
        let size = 0
        const chunks: Uint8Array[] = []
        for await (const chunk of reader.data(delimiter)) {
          size += chunk.byteLength
          if (size > MAX_FIELD_BYTES) throw malformed(`field ${name} is larger than ${MAX_FIELD_BYTES} bytes`)
          chunks.push(Buffer.from(chunk))
        }
        handlers.onField(name, Buffer.concat(chunks).toString('utf8'))
      }
      await reader.until(delimiter, 0, 'delimiter')
    }
  } catch (error) {
    reader.cancel()
    throw error
  }
}
