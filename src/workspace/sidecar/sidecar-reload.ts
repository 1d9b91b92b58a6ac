/**
 * Engine reload: OpenCode's `POST /instance/dispose` for the workspace's directory, so config,
 * skills, commands and MCP entries are re-read on the next request.
 *
 * The call has a deadline (504 `sidecar_reload_timeout`): a dispose waits on running work and the
 * reference saw reloads long enough to hit idle timeouts. Automatic reloads after extension writes
 * are debounced per workspace, because reload storms were the most common complaint (#279, #272).
 * @module
 */
import type { SidecarTarget } from '../config/sidecar-config.ts'
import { sidecarFetch } from './upstream-fetch.ts'
import { workspaceError } from '../workspace-errors.ts'

/** The result of a successful reload. */
export interface ReloadResult {
  ok: true
  workspaceId: string
  durationMs: number
}

/** Disposes the sidecar instance for `target.directory`; throws 504/502 ApiErrors on failure. */
export async function reloadSidecar(
  workspaceId: string,
  target: SidecarTarget,
  timeoutMs: number,
): Promise<ReloadResult> {
  const started = performance.now()
  const response = await sidecarFetch(target, '/instance/dispose', {
    method: 'POST',
    timeoutMs,
    onTimeout: () =>
      workspaceError('sidecar_reload_timeout', `The sidecar did not finish reloading within ${timeoutMs} ms`, {
        details: { timeoutMs },
      }),
  })
  const text = await response.text().catch(() => '')
  if (!response.ok) {
    throw workspaceError('sidecar_reload_failed', 'The sidecar refused to reload', {
      details: { status: response.status, body: text.slice(0, 500) },
    })
  }
  return { ok: true, workspaceId, durationMs: Math.round(performance.now() - started) }
}

/**
 * Coalesces reload requests per workspace: calls within `delayMs` of each other produce one reload
 * `delayMs` after the last.
 */
export class ReloadDebouncer {
  readonly #timers = new Map<string, ReturnType<typeof setTimeout>>()

  constructor(
    private readonly delayMs: number,
    private readonly run: (workspaceId: string) => void,
  ) {}

  /** Schedules (or reschedules) a reload of `workspaceId`. */
  request(workspaceId: string): void {
    const existing = this.#timers.get(workspaceId)
    if (existing) clearTimeout(existing)
    this.#timers.set(
      workspaceId,
      setTimeout(() => {
        this.#timers.delete(workspaceId)
        this.run(workspaceId)
      }, this.delayMs),
    )
  }

  /** Number of reloads waiting (tests). */
  get pending(): number {
    return this.#timers.size
  }

  /** Drops every pending reload (shutdown). */
  cancelAll(): void {
    for (const timer of this.#timers.values()) clearTimeout(timer)
    this.#timers.clear()
  }
}
