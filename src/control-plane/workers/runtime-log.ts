/**
 * A Worker runtime's output on disk, and the bounds every provisioner's `logs` answer keeps.
 *
 * The `process` provisioner points the child's stdout and stderr at `<worker dir>/runtime.log`
 * (opened for append, 0600) instead of pipes: the output then outlives the control plane that
 * started the child (a SIGKILLed control plane leaves the runtime writing to its file, not to a
 * broken pipe), and any instance on the same host reads it after a restart. The file is kept
 * under a cap by copy-truncate ({@link rotateRuntimeLog}): its last part moves to `runtime.log.1`
 * and the file is truncated; the writer appends (O_APPEND), so it continues at the new end. A
 * few lines written during the copy can be lost, as with logrotate's copytruncate.
 *
 * Reading never loads the file: {@link tailRuntimeLog} reads backwards from the end in chunks
 * until it has the lines asked for or has read its byte budget.
 * @module
 */
import { closeSync, fstatSync, openSync, readSync, renameSync, statSync, truncateSync, writeSync } from 'node:fs'
import { join } from 'node:path'

/** Name of the live log file in a Worker's directory. */
export const RUNTIME_LOG = 'runtime.log'
/** The previous part, after a rotation. */
export const RUNTIME_LOG_ROTATED = 'runtime.log.1'

/** Lines answered when `tail` is not given. */
export const LOG_TAIL_DEFAULT = 100
/** Most lines one answer may ask for. */
export const LOG_TAIL_MAX = 1000

/** Default size at which `runtime.log` is rotated (so both files hold at most about twice this). */
export const RUNTIME_LOG_CAP_BYTES = 1024 * 1024
/** Lines longer than this (in UTF-16 units) are cut, with {@link CUT_MARK} appended. */
export const LOG_LINE_MAX = 2048
/** Most bytes of lines one answer carries (and most bytes a tail reads from disk, times two). */
export const LOG_ANSWER_MAX_BYTES = 256 * 1024
/** Appended to a line that was cut. */
export const CUT_MARK = ' …[cut]'

const CHUNK = 64 * 1024

/**
 * Tokens as we issue them (`<prefix><43 base64url chars>`) and any long base64url run with both
 * cases and a digit (random secrets of other shapes), a bearer value, and the one-time code of a
 * console link. Ids (`wrk_` + 26 upper-case chars) and hex digests do not match.
 */
const SECRET_PATTERNS: RegExp[] = [
  /\b(?:wk[cha]|svc(?:_[a-z]+)?|sst|oat|ort|svi|dcap|oac|odc)_[A-Za-z0-9_-]{16,}/g,
  /\b(bearer\s+)[^\s"',;]+/gi,
  /([#?&]code=)[^\s"'&]+/g,
]
const LONG_RUN = /[A-Za-z0-9_-]{32,}/g

/** The line with every secret-looking value replaced by `[redacted]`. */
export function redactSecrets(line: string): string {
  let out = line
  for (const pattern of SECRET_PATTERNS)
    out = out.replace(pattern, (_match, keep?: unknown) => `${typeof keep === 'string' ? keep : ''}[redacted]`)
  return out.replace(LONG_RUN, (run) =>
    /[a-z]/.test(run) && /[A-Z]/.test(run) && /[0-9]/.test(run) ? '[redacted]' : run,
  )
}

/**
 * What an API answer carries of a provisioner's lines: at most `tail` (the newest), each redacted
 * and cut to {@link LOG_LINE_MAX}, at most {@link LOG_ANSWER_MAX_BYTES} in all (older lines are
 * dropped first). `truncated` is set when a line was cut or a line within `tail` was dropped for
 * size, and kept when the provisioner already set it.
 */
export function boundLogLines(
  found: { lines: string[]; truncated: boolean },
  tail: number,
): { lines: string[]; truncated: boolean } {
  let truncated = found.truncated
  const picked = found.lines.slice(-tail)
  const out: string[] = []
  let bytes = 0
  for (let i = picked.length - 1; i >= 0; i--) {
    let line = redactSecrets(picked[i]!)
    if (line.length > LOG_LINE_MAX) {
      line = line.slice(0, LOG_LINE_MAX) + CUT_MARK
      truncated = true
    }
    bytes += Buffer.byteLength(line) + 1
    if (bytes > LOG_ANSWER_MAX_BYTES) {
      truncated = true
      break
    }
    out.push(line)
  }
  return { lines: out.reverse(), truncated }
}

/** Opens `runtime.log` of a Worker directory for appending (rotated first when over `cap`). */
export function openRuntimeLog(root: string, cap = RUNTIME_LOG_CAP_BYTES): number {
  rotateRuntimeLog(root, cap)
  return openSync(join(root, RUNTIME_LOG), 'a', 0o600)
}

/** Appends one line written by the control plane itself (a start marker). */
export function appendRuntimeLog(fd: number, line: string): void {
  writeSync(fd, `${line}\n`)
}

/**
 * When `runtime.log` is over `cap` bytes: its last `cap` bytes (from a line start) become
 * `runtime.log.1` (written aside, then renamed over the old one) and `runtime.log` is truncated
 * to zero. Returns whether it rotated.
 */
export function rotateRuntimeLog(root: string, cap = RUNTIME_LOG_CAP_BYTES): boolean {
  const live = join(root, RUNTIME_LOG)
  let size: number
  try {
    size = statSync(live).size
  } catch {
    return false
  }
  if (size <= cap) return false
  const fd = openSync(live, 'r')
  try {
    const length = Math.min(size, cap)
    const buffer = Buffer.alloc(length)
    const read = readSync(fd, buffer, 0, length, size - length)
    let body = buffer.subarray(0, read)
    if (length < size) {
      const newline = body.indexOf(10)
      if (newline >= 0) body = body.subarray(newline + 1)
    }
    const aside = join(root, `${RUNTIME_LOG_ROTATED}.tmp`)
    const out = openSync(aside, 'w', 0o600)
    try {
      writeSync(out, body)
    } finally {
      closeSync(out)
    }
    renameSync(aside, join(root, RUNTIME_LOG_ROTATED))
  } finally {
    closeSync(fd)
  }
  truncateSync(live, 0)
  return true
}

/** Reads lines backwards from the end of one file; `budget` caps the bytes read. */
function tailFile(path: string, want: number, budget: number): { lines: string[]; complete: boolean; read: number } {
  let fd: number
  try {
    fd = openSync(path, 'r')
  } catch {
    return { lines: [], complete: true, read: 0 }
  }
  try {
    let position = fstatSync(fd).size
    let carry = Buffer.alloc(0)
    const lines: string[] = []
    let read = 0
    // A trailing newline ends the last line; it does not start an empty one.
    let skipTrailingNewline = true
    while (position > 0 && lines.length < want && read < budget) {
      const length = Math.min(CHUNK, position, budget - read)
      position -= length
      const chunk = Buffer.alloc(length)
      readSync(fd, chunk, 0, length, position)
      read += length
      let buffer = Buffer.concat([chunk, carry])
      if (skipTrailingNewline && buffer.length > 0) {
        if (buffer[buffer.length - 1] === 10) buffer = buffer.subarray(0, buffer.length - 1)
        skipTrailingNewline = false
      }
      let end = buffer.length
      for (let i = buffer.length - 1; i >= 0 && lines.length < want; i--) {
        if (buffer[i] !== 10) continue
        lines.push(buffer.subarray(i + 1, end).toString('utf8'))
        end = i
      }
      carry = buffer.subarray(0, end)
      // A line longer than the budget: keep its end, it is cut when answered anyway.
      if (carry.length > LOG_LINE_MAX * 4) carry = carry.subarray(carry.length - LOG_LINE_MAX * 4)
    }
    const atStart = position === 0
    // At the start of the file what is left is its first line.
    if (atStart && lines.length < want && carry.length > 0) lines.push(carry.toString('utf8'))
    return { lines: lines.reverse(), complete: atStart || lines.length >= want, read }
  } finally {
    closeSync(fd)
  }
}

/**
 * The last `tail` lines of a Worker directory's output (`runtime.log.1` then `runtime.log`),
 * oldest first, reading at most about twice {@link LOG_ANSWER_MAX_BYTES}. `truncated` when the
 * byte budget stopped the read before `tail` lines or the start of the output.
 */
export function tailRuntimeLog(root: string, tail: number): { lines: string[]; truncated: boolean } {
  const budget = LOG_ANSWER_MAX_BYTES * 2
  const live = tailFile(join(root, RUNTIME_LOG), tail, budget)
  if (live.lines.length >= tail || !live.complete) return { lines: live.lines, truncated: !live.complete }
  const older = tailFile(join(root, RUNTIME_LOG_ROTATED), tail - live.lines.length, budget - live.read)
  return { lines: [...older.lines, ...live.lines], truncated: !older.complete }
}
