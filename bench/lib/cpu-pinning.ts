/**
 * Optional CPU pinning for throughput figures (`--pin` / `BENCH_PIN=1`): every server the bench
 * starts runs on core 0, the load generator on the other cores.
 *
 * Why: on a 2-core machine the server and wrk otherwise share both cores as the scheduler pleases,
 * and an A/A run of two identical servers (`noise-floor`) spreads over ±15 %; that is larger than
 * the gap some targets ask about (`/health` ≥ 0.95 of its ceiling). Each compared server gets the
 * same core, one at a time, so pinning favours no side. PostgreSQL's backends are not pinned.
 * @module
 */
import { availableParallelism } from 'node:os'
import { onPath } from './run-command.ts'

let cached: boolean | undefined

/** True when pinning was asked for and can be done here (Linux `taskset`, at least 2 cores). */
export function pinning(): boolean {
  cached ??= process.env.BENCH_PIN === '1' && availableParallelism() >= 2 && onPath('taskset')
  return cached
}

/** `command args` run on the cores of `role`, or unchanged when not pinning. */
export function pinned(role: 'server' | 'client', command: string, args: string[]): [string, string[]] {
  if (!pinning()) return [command, args]
  const cores = role === 'server' ? '0' : `1-${availableParallelism() - 1}`
  return ['taskset', ['-c', cores, command, ...args]]
}
