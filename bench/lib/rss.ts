/**
 * Resident memory of a process, read from Linux procfs.
 *
 * Why: memory targets compare the product binary with a hello-world
 * binary; VmRSS from /proc/<pid>/status is what `ps`/`top` report and needs
 * no extra tooling. Returns null off Linux or if the process is gone, so a
 * case can skip instead of crash.
 */
import { readFileSync } from 'node:fs'

/** Memory lines of /proc/<pid>/status, in KiB. */
export interface ProcMemory {
  /** Resident set size (what the target is measured on). */
  vmRssKb: number
  /** Peak resident set size since start (context: startup spikes). */
  vmHwmKb: number | null
  /**
   * The two halves of VmRSS: private memory (heaps, caches) and file-backed pages, most of them the
   * executable's own (the runtime's native code and our embedded bytecode) that a start touched.
   */
  rssAnonKb: number | null
  rssFileKb: number | null
}

/** Read VmRSS/VmHWM of `pid` in KiB, or null when procfs is unavailable or the pid has exited. */
export function readProcMemory(pid: number): ProcMemory | null {
  let text: string
  try {
    text = readFileSync(`/proc/${pid}/status`, 'utf8')
  } catch {
    return null
  }
  const field = (name: string): number | null => {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB`, 'm').exec(text)
    return m ? Number(m[1]) : null
  }
  const vmRssKb = field('VmRSS')
  if (vmRssKb === null) return null
  return { vmRssKb, vmHwmKb: field('VmHWM'), rssAnonKb: field('RssAnon'), rssFileKb: field('RssFile') }
}
