/**
 * A minimal ustar writer: directories and regular files with explicit owner and mode, enough
 * for the engine's archive upload (a Worker's credential files) and for image layers. Names are
 * relative, at most 100 bytes (the paths written here are short and fixed).
 * @module
 */

/** One member of an archive. */
export interface TarEntry {
  name: string
  type: 'file' | 'dir'
  mode: number
  uid?: number
  gid?: number
  /** File content (files only). */
  data?: Uint8Array
  /** Size when the content is written separately (streamed layers). */
  size?: number
}

function octal(value: number, width: number): string {
  return `${value.toString(8).padStart(width - 1, '0')}\0`
}

/** The 512-byte header of `entry`. */
export function tarHeader(entry: TarEntry): Buffer {
  const name = entry.type === 'dir' && !entry.name.endsWith('/') ? `${entry.name}/` : entry.name
  if (Buffer.byteLength(name) > 100) throw new Error(`tar member name too long: ${name}`)
  const size = entry.type === 'dir' ? 0 : (entry.size ?? entry.data?.length ?? 0)
  const header = Buffer.alloc(512)
  header.write(name, 0, 100, 'utf8')
  header.write(octal(entry.mode & 0o7777, 8), 100, 8, 'ascii')
  header.write(octal(entry.uid ?? 0, 8), 108, 8, 'ascii')
  header.write(octal(entry.gid ?? 0, 8), 116, 8, 'ascii')
  header.write(octal(size, 12), 124, 12, 'ascii')
  // A fixed time keeps an archive of the same files byte-identical (image layers are content-addressed).
  header.write(octal(0, 12), 136, 12, 'ascii')
  header.write('        ', 148, 8, 'ascii')
  header.write(entry.type === 'dir' ? '5' : '0', 156, 1, 'ascii')
  header.write('ustar\0', 257, 6, 'ascii')
  header.write('00', 263, 2, 'ascii')
  let sum = 0
  for (const byte of header) sum += byte
  header.write(`${sum.toString(8).padStart(6, '0')}\0 `, 148, 8, 'ascii')
  return header
}

/** Zero bytes that pad `size` bytes of content to a whole block. */
export function tarPadding(size: number): Buffer {
  return Buffer.alloc((512 - (size % 512)) % 512)
}

/** The two zero blocks that end an archive. */
export const TAR_END = Buffer.alloc(1024)

/** A whole archive in memory (small archives only). */
export function tarArchive(entries: TarEntry[]): Buffer {
  const parts: Buffer[] = []
  for (const entry of entries) {
    parts.push(tarHeader(entry))
    if (entry.type === 'file' && entry.data) {
      parts.push(Buffer.from(entry.data), tarPadding(entry.data.length))
    }
  }
  parts.push(TAR_END)
  return Buffer.concat(parts)
}
