/**
 * Time from exec to the first HTTP 200.
 *
 * Why: "start time" that matters to a user is not "process exists" nor
 * "port bound" but "answers a request". The clock starts just before spawn
 * and stops when a 200 arrives on the probe path. Because servers listen on
 * `--port 0`, the port is learnt from the listening line first, then the path
 * is polled without delay until it answers 200. The same path is used for the
 * product and the hello-world reference, so pipe/fetch overhead cancels out in
 * the ratio.
 */
import { performance } from 'node:perf_hooks'
import { startServer, type RunningServer, type ServerCommand } from './server-process.ts'

/** One measured start. */
export interface StartTiming {
  /** Exec → listening line on stdout, in ms. */
  listeningMs: number
  /** Exec → first 200 on the probe path, in ms (the figure compared). */
  firstOkMs: number
  /** Failed probes before the 200 (connection refused, 503, ...). */
  failedProbes: number
  pid: number
}

/**
 * Start `cmd`, poll `path` until it answers 200, then call `whileRunning`
 * (e.g. to read memory) and stop the server. The server is always stopped.
 */
export async function timeToFirstOk(
  cmd: ServerCommand,
  path = '/health',
  timeoutMs = 15_000,
  whileRunning?: (server: RunningServer) => Promise<void>,
): Promise<StartTiming> {
  const server = await startServer(cmd, timeoutMs)
  try {
    const deadline = server.spawnedAt + timeoutMs
    let failedProbes = 0
    for (;;) {
      try {
        const res = await fetch(`${server.baseUrl}${path}`)
        await res.arrayBuffer()
        if (res.status === 200) break
      } catch {
        /* not accepting yet */
      }
      failedProbes++
      if (performance.now() > deadline)
        throw new Error(`${cmd.label}: no 200 on ${path} within ${timeoutMs} ms\n${server.outputTail()}`)
    }
    const firstOkMs = performance.now() - server.spawnedAt
    if (whileRunning) await whileRunning(server)
    return { listeningMs: server.listeningAt - server.spawnedAt, firstOkMs, failedProbes, pid: server.pid }
  } finally {
    await server.stop()
  }
}
