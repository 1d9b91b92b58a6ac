/**
 * Description of the machine a bench ran on.
 *
 * Why: ratios are comparable across machines, absolute figures are not; the
 * results file records cores, memory and runtime versions so a reader can
 * tell which is which (and spot a 2-core CI box where client and server
 * compete for CPU).
 */
import { readFileSync } from 'node:fs'
import { availableParallelism, cpus, totalmem, release } from 'node:os'

/** Machine facts recorded in latest.json. */
export interface MachineInfo {
  cores: number
  cpuModel: string
  memTotalMb: number
  platform: string
  arch: string
  kernel: string
  bunVersion: string | null
  loadAverage1m: number | null
}

/**
 * 1-minute load average, or null off Linux. Why: on a box where other work
 * is running, throughput ratios swing by ±15 % per round; the runner warns
 * and records it so a FAIL on a busy machine is read as "rerun", not "regression".
 */
export function loadAverage1m(): number | null {
  try {
    return Number(readFileSync('/proc/loadavg', 'utf8').split(' ')[0])
  } catch {
    return null
  }
}

/** Collect machine facts (cheap, synchronous). */
export function machineInfo(): MachineInfo {
  const bun = (globalThis as { Bun?: { version: string } }).Bun
  const load = loadAverage1m()
  return {
    cores: availableParallelism(),
    cpuModel: cpus()[0]?.model ?? 'unknown',
    memTotalMb: Math.round(totalmem() / 1024 / 1024),
    platform: process.platform,
    arch: process.arch,
    kernel: release(),
    bunVersion: bun?.version ?? null,
    loadAverage1m: load,
  }
}
