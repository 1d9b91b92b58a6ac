/**
 * The wire shape of sidecar status inside `/status` and `/capabilities`, declared here so the
 * discovery routes document it without knowing how it is produced.
 * @module
 */
import * as v from 'valibot'
import type { SidecarOverview } from './sidecar-service.ts'

/** One workspace's sidecar, as `/status` reports it (never credentials). */
export const SidecarStatusSchema = v.object({
  configured: v.boolean(),
  managed: v.boolean(),
  baseUrl: v.nullable(v.string()),
  reachable: v.boolean(),
  version: v.nullable(v.string()),
  error: v.nullable(v.object({ code: v.string(), cause: v.optional(v.string()), status: v.optional(v.number()) })),
  checkedAt: v.nullable(v.string()),
})

/** `/status` → `sidecar`: per workspace id, plus the managed process when there is one. */
export const SidecarOverviewSchema = v.object({
  workspaces: v.record(v.string(), SidecarStatusSchema),
  managed: v.nullable(
    v.object({
      state: v.picklist(['starting', 'running', 'restarting', 'stopped']),
      pid: v.nullable(v.number()),
      restarts: v.number(),
      lastExit: v.nullable(v.object({ code: v.nullable(v.number()), signal: v.nullable(v.string()), at: v.string() })),
    }),
  ),
})

/** `/capabilities` → `proxy.workspaces`: reachability and version only. */
export const SidecarReachabilitySchema = v.record(
  v.string(),
  v.object({ configured: v.boolean(), reachable: v.boolean(), version: v.nullable(v.string()) }),
)

/** What the discovery routes need from the sidecar feature. */
export interface SidecarReporter {
  readonly anyConfigured: boolean
  overview(): Promise<SidecarOverview>
}

/** The `/capabilities` view of an overview. */
export function reachability(overview: SidecarOverview): v.InferOutput<typeof SidecarReachabilitySchema> {
  return Object.fromEntries(
    Object.entries(overview.workspaces).map(([id, s]) => [
      id,
      { configured: s.configured, reachable: s.reachable, version: s.version },
    ]),
  )
}
