/**
 * Streams a file as a download with `Content-Length`, `Content-Disposition` and single-range
 * `Range` support (206 with `Content-Range`; 416 with `bytes *\/size` when unsatisfiable). The file
 * is read in chunks from the already opened, containment-checked descriptor, never whole.
 * @module
 */
import type { FileHandle } from 'node:fs/promises'
import type { ApiError } from '../../core/errors.ts'
import { workspaceError } from '../workspace-errors.ts'

const CHUNK = 256 * 1024

/** A header value naming the file safely: ASCII fallback plus the RFC 5987 UTF-8 form. */
export function contentDisposition(name: string, kind: 'attachment' | 'inline' = 'attachment'): string {
  const ascii = name.replace(/[^\x20-\x7e]/g, '_').replace(/["\\]/g, '_')
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)}`
}

/** The byte range a `Range` header asks for: null for the whole file, or throws 416. */
export function parseRange(header: string | null, size: number): { start: number; end: number } | null {
  if (!header) return null
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim())
  // Several ranges or another unit: serve the whole file (allowed by RFC 9110).
  if (!match || (match[1] === '' && match[2] === '')) return null
  let start: number
  let end: number
  if (match[1] === '') {
    const suffix = Number(match[2])
    if (suffix === 0) throw unsatisfiable(size)
    start = Math.max(0, size - suffix)
    end = size - 1
  } else {
    start = Number(match[1])
    end = match[2] === '' ? size - 1 : Math.min(Number(match[2]), size - 1)
    if (match[2] !== '' && Number(match[2]) < start) throw unsatisfiable(size)
  }
  if (start >= size || size === 0) throw unsatisfiable(size)
  return { start, end }
}

function unsatisfiable(size: number): ApiError {
  return workspaceError('range_not_satisfiable', 'Requested range is not satisfiable', {
    details: { size },
    headers: { 'content-range': `bytes */${size}` },
  })
}

/** A download response over an open handle; the handle is closed when the stream ends or is cancelled. */
export function downloadResponse(handle: FileHandle, size: number, name: string, rangeHeader: string | null): Response {
  let range: { start: number; end: number } | null
  try {
    range = parseRange(rangeHeader, size)
  } catch (error) {
    void handle.close()
    throw error
  }
  const start = range?.start ?? 0
  const end = range ? range.end : size - 1
  let position = start
  let closed = false
  const close = () => {
    if (!closed) {
      closed = true
      void handle.close().catch(() => {})
    }
  }
  const body = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const want = Math.min(CHUNK, end - position + 1)
      if (want <= 0) {
        close()
        controller.close()
        return
      }
      const buffer = new Uint8Array(want)
      const { bytesRead } = await handle.read(buffer, 0, want, position)
      if (bytesRead === 0) {
        close()
        controller.close()
        return
      }
      position += bytesRead
      controller.enqueue(bytesRead === want ? buffer : buffer.subarray(0, bytesRead))
    },
    cancel: close,
  })
  const headers: Record<string, string> = {
    'content-type': 'application/octet-stream',
    'content-length': String(Math.max(0, end - start + 1)),
    'content-disposition': contentDisposition(name),
    'accept-ranges': 'bytes',
    'cache-control': 'no-store',
  }
  if (range) headers['content-range'] = `bytes ${start}-${end}/${size}`
  if (size === 0) {
    close()
    return new Response(null, { status: 200, headers })
  }
  return new Response(body, { status: range ? 206 : 200, headers })
}
