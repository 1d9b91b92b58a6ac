/**
 * The per-workspace base URL `/w/:id/...`, so a client configured with one URL per workspace can
 * reach every route it needs (the reference's mount).
 *
 * Mapped onto the normal route table by the HTTP app's `rewrite` hook, so no route is declared twice:
 * - `/w/:id/workspace/:id/...` → `/workspace/:id/...` (a different nested id → 404);
 * - `/w/:id/health|status|capabilities|workspaces|whoami|openapi.json` → the root route;
 * - `/w/:id/files/sessions/...` and `/w/:id/approvals...`, `/w/:id/tokens...` → the root route;
 * - `/w/:id/sidecar/...` is a declared route of its own and is left alone.
 * An unknown mount id, or a nested workspace id that differs from the mount's, answers 404 `not_found`
 * (as the reference does); `/w/:unknown/sidecar/...` answers 404 `workspace_not_found`.
 * @module
 */

/** Root routes reachable under the mount as-is. */
const ROOT_PREFIXES = [
  '/health',
  '/status',
  '/capabilities',
  '/workspaces',
  '/whoami',
  '/openapi.json',
  '/files/sessions',
  '/approvals',
  '/tokens',
]

/** Where the rewrite sends a mount whose workspace does not exist or does not match: no route, so 404. */
export const MOUNT_MISMATCH_PATH = '/w/-/not-found'

function decode(segment: string): string | null {
  try {
    return decodeURIComponent(segment)
  } catch {
    return null
  }
}

/** Builds the rewrite for the HTTP app: maps `/w/:id/...` URLs, or returns null to leave the URL. */
export function workspaceMountRewrite(workspaceIds: readonly string[]): (url: URL) => URL | null {
  const known = new Set(workspaceIds)
  return (url) => {
    const match = /^\/w\/([^/]+)(\/.*)?$/.exec(url.pathname)
    if (!match) return null
    const id = decode(match[1]!)
    const rest = match[2] ?? '/'
    const out = new URL(url)
    if (rest.startsWith('/sidecar/')) return null
    if (id === null || !known.has(id)) {
      out.pathname = MOUNT_MISMATCH_PATH
      return out
    }
    const nested = /^\/workspace\/([^/]+)(\/.*)?$/.exec(rest)
    if (nested) {
      if (decode(nested[1]!) !== id) out.pathname = MOUNT_MISMATCH_PATH
      else out.pathname = rest
      return out
    }
    if (ROOT_PREFIXES.some((p) => rest === p || rest.startsWith(p + '/'))) {
      out.pathname = rest
      return out
    }
    return null
  }
}
