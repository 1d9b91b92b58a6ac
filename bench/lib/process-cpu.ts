/**
 * CPU time a process has used, read from Linux procfs.
 *
 * Why: on a shared VM a throughput round moves by up to ±30 % with what the neighbours do, while
 * the CPU a server spends per request barely moves; printed next to req/s it tells a slower
 * server from a slower round. Returns null off Linux or once the process is gone.
 */
import { readFileSync } from 'node:fs'

/** Clock ticks per second of `utime`/`stime`; 100 on every Linux configuration Bun supports. */
const TICKS_PER_SECOND = 100

/** User plus system CPU seconds of `pid` so far (all its threads), or null. */
export function processCpuSeconds(pid: number): number | null {
  let stat: string
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  } catch {
    return null
  }
  // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  const utime = Number(fields[11])
  const stime = Number(fields[12])
  return Number.isFinite(utime) && Number.isFinite(stime) ? (utime + stime) / TICKS_PER_SECOND : null
}
