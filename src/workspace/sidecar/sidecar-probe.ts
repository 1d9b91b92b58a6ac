/**
 * Whether a workspace's sidecar answers, and which version it is, for `/status` and
 * `/capabilities`. Answers are cached briefly so status polling never turns into sidecar load,
 * and never include credentials.
 * @module
 */
import { ApiError } from '../../core/errors.ts'
import { publicBaseUrl, type SidecarTarget } from '../config/sidecar-config.ts'
import { sidecarFetch } from './upstream-fetch.ts'

/** The public view of one workspace's sidecar. */
export interface SidecarStatus {
  configured: boolean
  managed: boolean
  /** Base URL without userinfo, or null. */
  baseUrl: string | null
  reachable: boolean
  /** The sidecar's reported version, when reachable. */
  version: string | null
  /** Why it is not reachable: `{code, cause?}` such as `sidecar_unreachable` / `ECONNREFUSED`. */
  error: { code: string; cause?: string; status?: number } | null
  checkedAt: string | null
}

const UNCONFIGURED: SidecarStatus = {
  configured: false,
  managed: false,
  baseUrl: null,
  reachable: false,
  version: null,
  error: null,
  checkedAt: null,
}

/** Probes `GET /global/health`. */
export async function probeSidecar(target: SidecarTarget | undefined, timeoutMs: number): Promise<SidecarStatus> {
  if (!target) return UNCONFIGURED
  const base = {
    configured: true,
    managed: target.managed,
    baseUrl: publicBaseUrl(target.baseUrl),
    checkedAt: new Date().toISOString(),
  }
  try {
    const response = await sidecarFetch(target, '/global/health', { timeoutMs })
    const body = (await response.json().catch(() => null)) as { healthy?: unknown; version?: unknown } | null
    if (!response.ok) {
      const code = response.status === 401 ? 'sidecar_auth_failed' : 'sidecar_unhealthy'
      return { ...base, reachable: false, version: null, error: { code, status: response.status } }
    }
    return {
      ...base,
      reachable: body?.healthy !== false,
      version: typeof body?.version === 'string' ? body.version : null,
      error: null,
    }
  } catch (error) {
    const apiError = error instanceof ApiError ? error : null
    const cause = (apiError?.details as { cause?: string } | undefined)?.cause
    return { ...base, reachable: false, version: null, error: { code: apiError?.code ?? 'sidecar_unreachable', cause } }
  }
}

/** Caches probe results per workspace for `ttlMs`, sharing one in-flight probe. */
export class ProbeCache {
  readonly #entries = new Map<string, { at: number; value: Promise<SidecarStatus> }>()

  constructor(private readonly ttlMs: number) {}

  /** The cached status, or a fresh probe via `probe`. */
  get(workspaceId: string, probe: () => Promise<SidecarStatus>): Promise<SidecarStatus> {
    const now = performance.now()
    const hit = this.#entries.get(workspaceId)
    if (hit && now - hit.at < this.ttlMs) return hit.value
    const value = probe()
    this.#entries.set(workspaceId, { at: now, value })
    return value
  }

  /** Forgets a workspace's answer (after a reload or a managed restart). */
  invalidate(workspaceId?: string): void {
    if (workspaceId === undefined) this.#entries.clear()
    else this.#entries.delete(workspaceId)
  }
}
