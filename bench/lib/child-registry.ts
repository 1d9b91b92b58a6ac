/**
 * Process-wide registry of child processes started by the bench.
 *
 * Why: a benchmark that is interrupted (Ctrl-C, a thrown error, a timeout)
 * must never leave servers or load generators running in the background,
 * because they would skew the next run and hold ports. Every spawn in
 * `bench/` goes through `track()`, and `installCleanupHandlers()` kills
 * whatever is still alive on SIGINT/SIGTERM/exit.
 */
import type { ChildProcess } from 'node:child_process'

const live = new Set<ChildProcess>()
const exitHooks: Array<() => void> = []
let installed = false

/** Remember a child so it is killed if the bench is interrupted; forgets it once it exits. */
export function track<T extends ChildProcess>(child: T): T {
  live.add(child)
  child.once('exit', () => live.delete(child))
  return child
}

/** Synchronously SIGKILL every tracked child that is still running (last-resort cleanup). */
export function killAllTracked(): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) {
      try {
        child.kill('SIGKILL')
      } catch {
        /* already gone */
      }
    }
  }
  live.clear()
}

/**
 * Register a synchronous hook (e.g. removing a temp dir) that runs when the
 * bench is interrupted or exits. Hooks run after children are killed.
 */
export function onBenchExit(hook: () => void): void {
  exitHooks.push(hook)
}

function runExitHooks(): void {
  while (exitHooks.length > 0) {
    const hook = exitHooks.pop()!
    try {
      hook()
    } catch {
      /* best effort */
    }
  }
}

/**
 * Install SIGINT/SIGTERM/exit handlers once. On a signal the children are
 * killed, exit hooks run, and the process exits with 128+signal.
 */
export function installCleanupHandlers(): void {
  if (installed) return
  installed = true
  const onSignal = (signal: NodeJS.Signals, code: number) => {
    process.stderr.write(`\nbench: received ${signal}, stopping child processes\n`)
    killAllTracked()
    runExitHooks()
    process.exit(code)
  }
  process.on('SIGINT', () => onSignal('SIGINT', 130))
  process.on('SIGTERM', () => onSignal('SIGTERM', 143))
  process.on('exit', () => {
    killAllTracked()
    runExitHooks()
  })
}
