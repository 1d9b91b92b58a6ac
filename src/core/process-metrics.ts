/**
 * Process metrics under the names Prometheus's own client libraries use (`process_*`), plus the
 * event loop's delay. Read on scrape; the one thing that runs between scrapes is a timer every
 * half second measuring how late it fires, and only while metrics are on.
 * @module
 */
import { readdirSync, readFileSync } from 'node:fs'
import type { MetricsRegistry } from './metrics-registry.ts'

/** How often the event-loop delay is sampled, and how many samples the reported maximum covers. */
const DELAY_SAMPLE_MS = 500
const DELAY_WINDOW = 20

/** Counts `/proc/self/fd` (Linux); undefined where there is none. */
function openFds(): number | undefined {
  try {
    return readdirSync('/proc/self/fd').length
  } catch {
    return undefined
  }
}

function maxFds(): number | undefined {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'))
    const soft = line?.split(/\s+/)[3]
    return soft && /^\d+$/.test(soft) ? Number(soft) : undefined
  } catch {
    return undefined
  }
}

/** Registers the process metrics; returns the function that stops the delay sampler. */
export function registerProcessMetrics(registry: MetricsRegistry): () => void {
  const startSeconds = Math.round(Date.now() / 1000 - process.uptime())
  registry.counterFrom('process_cpu_seconds_total', 'User and system CPU time spent, in seconds.', () => {
    const { user, system } = process.cpuUsage()
    return (user + system) / 1e6
  })
  registry.gauge('process_resident_memory_bytes', 'Resident memory size in bytes.', () => process.memoryUsage.rss())
  registry.gauge(
    'process_start_time_seconds',
    'Start time of the process since the Unix epoch, in seconds.',
    () => startSeconds,
  )
  if (openFds() !== undefined) {
    registry.gauge('process_open_fds', 'Number of open file descriptors.', () => openFds() ?? [])
    const max = maxFds()
    if (max !== undefined) registry.gauge('process_max_fds', 'Maximum number of open file descriptors.', () => max)
  }
  const samples: number[] = []
  let expected = performance.now() + DELAY_SAMPLE_MS
  const timer = setInterval(() => {
    const now = performance.now()
    samples.push(Math.max(0, now - expected) / 1000)
    if (samples.length > DELAY_WINDOW) samples.shift()
    expected = now + DELAY_SAMPLE_MS
  }, DELAY_SAMPLE_MS)
  ;(timer as { unref?: () => void }).unref?.()
  registry.gauge(
    'service_event_loop_delay_seconds',
    `Largest delay of the event loop over the last ${(DELAY_SAMPLE_MS * DELAY_WINDOW) / 1000} s (a timer's lateness), in seconds.`,
    () => (samples.length ? Math.max(...samples) : 0),
  )
  return () => clearInterval(timer)
}
