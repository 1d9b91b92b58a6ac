/**
 * The organization link as `GET /workspace/:id/org` shows it to the host: the link's record and
 * state, the managed items with their files (config entries such as MCP servers, instructions and a
 * Worker's providers are listed as items without files, and never with their configuration), open
 * conflicts and refused items. Never a token.
 * @module
 */
import type { OrgLinkState } from './org-link.ts'
import type { OrgLinkRecord } from './org-link-state.ts'

/** What `GET /workspace/:id/org` answers. */
export interface OrgLinkView {
  controlPlaneUrl: string
  via: 'device' | 'worker'
  organization: { id: string; name: string } | null
  member: Record<string, unknown> | null
  state: OrgLinkState
  lastSyncAt: number | null
  lastError: { code: string; message: string; at: number } | null
  linking: { userCode: string; verificationUri: string; verificationUriComplete: string; expiresAt: number } | null
  delivered: Array<{ objectId: string; type: string; name: string; versionId: string; files: string[] }>
  conflicts: OrgLinkRecord['conflicts']
  refused: Array<{ objectId: string; name: string; reason: string }>
}

/** Builds the view of a running link. */
export function linkView(
  r: Readonly<OrgLinkRecord>,
  live: Pick<OrgLinkView, 'state' | 'lastError' | 'linking' | 'refused'>,
): OrgLinkView {
  const items = new Map<string, OrgLinkView['delivered'][number]>()
  for (const [path, entry] of Object.entries(r.manifest)) {
    const item = items.get(entry.objectId) ?? {
      objectId: entry.objectId,
      type: entry.type,
      name: entry.name,
      versionId: entry.versionId,
      files: [],
    }
    // MCP entries, instructions and providers are config, not files (and a provider's key is never shown).
    if (!/^(mcp|instructions|provider)\//.test(path)) item.files.push(path)
    items.set(entry.objectId, item)
  }
  for (const item of items.values()) item.files.sort()
  return {
    controlPlaneUrl: r.controlPlaneUrl,
    via: r.via,
    organization: r.organization,
    member: r.member,
    state: live.state,
    lastSyncAt: r.lastSyncAt,
    lastError: live.lastError,
    linking: live.linking,
    delivered: [...items.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    conflicts: r.conflicts,
    refused: live.refused,
  }
}
