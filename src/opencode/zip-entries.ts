/**
 * The central directory of a zip, read for the two things fflate (0.8.3, measured) does not
 * expose: each entry's Unix mode (to refuse symlinks and devices and keep executable bits) and the
 * entry count before anything is inflated (so 100k tiny entries are refused in microseconds).
 * Entry data is never read here: fflate's streaming `Unzip` parses and inflates it, and the two
 * views must agree on the names or the archive is refused.
 * @module
 */
import type { ApiError } from '../core/errors.ts'
import { opencodeError } from './opencode-errors.ts'

/** One central-directory record. */
export interface ZipEntryInfo {
  name: string
  /** Unix mode bits when the archive was made on Unix, else null. */
  mode: number | null
  /** Uncompressed size the archive declares (a bomb lies about it; inflation is capped anyway). */
  declaredSize: number
  encrypted: boolean
}

const EOCD = 0x06054b50
const CENTRAL = 0x02014b50

function invalidZip(message: string): ApiError {
  return opencodeError('invalid_zip', `Not a readable zip archive: ${message}`)
}

/**
 * Reads the central directory. Zip64 archives are refused (a skill archive never needs 4 GiB or
 * 65,535 entries); `maxEntries` is checked against the declared count before the records are read.
 */
export function readZipEntries(zip: Uint8Array, maxEntries: number): ZipEntryInfo[] {
  const view = new DataView(zip.buffer, zip.byteOffset, zip.byteLength)
  let eocd = -1
  // The end record is 22 bytes plus a comment of at most 65,535 bytes.
  for (let i = zip.byteLength - 22; i >= Math.max(0, zip.byteLength - 22 - 0xffff); i--) {
    if (view.getUint32(i, true) === EOCD) {
      eocd = i
      break
    }
  }
  if (eocd < 0) throw invalidZip('no end of central directory record')
  const count = view.getUint16(eocd + 10, true)
  const size = view.getUint32(eocd + 12, true)
  const offset = view.getUint32(eocd + 16, true)
  if (count === 0xffff || size === 0xffffffff || offset === 0xffffffff)
    throw invalidZip('zip64 archives are not accepted for skills')
  if (count > maxEntries)
    throw opencodeError('zip_too_many_entries', `The archive has ${count} entries; at most ${maxEntries} are allowed`, {
      details: { limit: 'maxEntries', max: maxEntries, count },
    })
  if (offset + size > eocd) throw invalidZip('central directory out of bounds')
  const entries: ZipEntryInfo[] = []
  const decoder = new TextDecoder()
  let at = offset
  for (let i = 0; i < count; i++) {
    if (at + 46 > eocd || view.getUint32(at, true) !== CENTRAL) throw invalidZip('bad central directory record')
    const madeBy = view.getUint16(at + 4, true) >> 8
    const flags = view.getUint16(at + 8, true)
    const declaredSize = view.getUint32(at + 24, true)
    const nameLength = view.getUint16(at + 28, true)
    const extraLength = view.getUint16(at + 30, true)
    const commentLength = view.getUint16(at + 32, true)
    const external = view.getUint32(at + 38, true)
    if (at + 46 + nameLength > eocd) throw invalidZip('bad central directory record')
    const name = decoder.decode(zip.subarray(at + 46, at + 46 + nameLength))
    // Host 3 is Unix: the high 16 bits of the external attributes are st_mode.
    entries.push({ name, mode: madeBy === 3 ? external >>> 16 : null, declaredSize, encrypted: (flags & 1) !== 0 })
    at += 46 + nameLength + extraLength + commentLength
  }
  return entries
}
