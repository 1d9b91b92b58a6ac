/**
 * Heartbeats from a workspace server run as a hosted Worker to the control plane that started
 * it. Enabled only when all three of `SERVICE_CONTROL_PLANE_URL`, `SERVICE_WORKER_ID` and
 * `SERVICE_WORKER_ACTIVITY_TOKEN` (or `…_FILE`) are set (the provisioners set them); interval from
 * `SERVICE_WORKER_HEARTBEAT_INTERVAL_MS` (default 10 s). The first beat goes out at once, so a
 * new Worker turns healthy as soon as it listens. A 409 means the control plane stopped or failed
 * the Worker: reporting stops. Failures are logged without the token.
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import { workerActivityToken } from './worker-activity-token.ts'

/** A running reporter. */
export interface HeartbeatReporter {
  /** Sends one heartbeat now; resolves with the HTTP status (0 when unreachable). */
  beat(): Promise<number>
  stop(): void
}

const DEFAULT_INTERVAL_MS = 10_000

/** Starts reporting when the environment asks for it; otherwise returns null. */
export function startControlPlaneHeartbeat(
  env: Record<string, string | undefined>,
  options: { logger: Logger; version: string },
): HeartbeatReporter | null {
  const base = env.SERVICE_CONTROL_PLANE_URL?.replace(/\/+$/, '')
  const workerId = env.SERVICE_WORKER_ID
  const token = workerActivityToken(env)
  if (!base || !workerId || !token) return null
  const parsed = Number(env.SERVICE_WORKER_HEARTBEAT_INTERVAL_MS)
  const intervalMs = Number.isInteger(parsed) && parsed >= 50 ? parsed : DEFAULT_INTERVAL_MS
  const url = `${base}/v1/workers/${encodeURIComponent(workerId)}/heartbeat`
  let stopped = false
  let failing = false
  const beat = async (): Promise<number> => {
    try {
      const response = await fetch(url, {
        method: 'POST',
        // A key per beat: a beat the control plane ran but whose answer was lost is never counted twice.
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': 'application/json',
          'idempotency-key': crypto.randomUUID(),
        },
        body: JSON.stringify({ sentAt: new Date().toISOString(), version: options.version }),
        signal: AbortSignal.timeout(Math.max(1000, intervalMs)),
      })
      await response.body?.cancel()
      if (response.status === 409) {
        options.logger.warn('control plane reports this Worker as not running; heartbeats stop', { workerId })
        reporter.stop()
      } else if (!response.ok && !failing) {
        options.logger.warn('control plane refused a heartbeat', { workerId, status: response.status })
      }
      failing = !response.ok
      return response.status
    } catch (error) {
      if (!failing)
        options.logger.warn('control plane unreachable for heartbeats', { workerId, error: (error as Error).message })
      failing = true
      return 0
    }
  }
  const timer = setInterval(() => {
    if (!stopped) void beat()
  }, intervalMs)
  const reporter: HeartbeatReporter = {
    beat,
    stop() {
      stopped = true
      clearInterval(timer)
    },
  }
  void beat()
  return reporter
}
