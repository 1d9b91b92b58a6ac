/**
 * Reads an uploaded zip archive into memory with a running byte cap: the declared length is
 * checked first and the stream is cut as soon as it passes the cap, so a chunked upload of any
 * size never holds more than the limit (413 `zip_too_large` naming it).
 * @module
 */
import type { ApiError } from '../../core/errors.ts'
import { controlPlaneError } from '../control-plane-errors.ts'

function tooLarge(max: number, size: number): ApiError {
  return controlPlaneError('zip_too_large', `The archive is over ${max} bytes`, {
    details: { limit: 'maxZipBytes', max, size },
  })
}

/** The request body as bytes; 415 unless the content type is `application/zip`. */
export async function readZipBody(request: Request, maxBytes: number): Promise<Uint8Array> {
  const type = (request.headers.get('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/zip' && type !== 'application/x-zip-compressed')
    throw controlPlaneError('unsupported_media_type', 'Send the archive with Content-Type: application/zip')
  const declared = Number(request.headers.get('content-length') ?? '0')
  if (declared > maxBytes) throw tooLarge(maxBytes, declared)
  if (!request.body) throw controlPlaneError('invalid_zip', 'Not a readable zip archive: the body is empty')
  const chunks: Uint8Array[] = []
  let size = 0
  for await (const chunk of request.body as unknown as AsyncIterable<Uint8Array>) {
    size += chunk.byteLength
    if (size > maxBytes) {
      await request.body.cancel().catch(() => {})
      throw tooLarge(maxBytes, size)
    }
    chunks.push(chunk)
  }
  return new Uint8Array(Buffer.concat(chunks))
}
