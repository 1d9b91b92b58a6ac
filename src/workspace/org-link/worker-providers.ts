/**
 * A Worker's model providers (`llm_provider` items of its own delivery, keys included) go where
 * OpenCode reads them and nowhere a client can: the `provider` map of OpenCode's global config
 * (`$XDG_CONFIG_HOME/opencode/opencode.json`, else `~/.config/opencode/opencode.json`; the process
 * provisioner sets `HOME` to the Worker's own directory), mode 0600 in a 0700 directory. It is
 * outside the workspace, so no file route, export or approval diff can show it, and the keys never
 * appear in a response, an event or a log. Entries the link wrote are tracked in the manifest
 * (`provider/<name>`) and removed when no longer delivered; other keys of the file are left alone.
 * @module
 */
import * as fsp from 'node:fs/promises'
import { dirname } from 'node:path'
import { sha256Hex } from '../../core/sha256.ts'
import { ensureDir, writeFileAtomic } from '../../storage/fs.ts'
import type { DeliveredItem } from './delivered-set.ts'
import type { ManifestEntry } from './org-link-state.ts'
import { mcpDigest } from './sync-plan.ts'

/**
 * Writes the delivered providers into `file` (when anything changed) and returns the manifest
 * entries that describe them.
 */
export async function applyProviders(
  file: string,
  items: readonly DeliveredItem[],
  previous: Readonly<Record<string, ManifestEntry>>,
): Promise<{ manifest: Record<string, ManifestEntry>; changed: boolean }> {
  let current: Record<string, unknown> = {}
  let text = ''
  try {
    text = await fsp.readFile(file, 'utf8')
    const parsed = JSON.parse(text)
    if (typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed)) current = parsed
  } catch {
    // Missing or unreadable: the Worker's home is the organization's, so the file is written anew.
  }
  const providers = { ...((current.provider as Record<string, unknown> | undefined) ?? {}) }
  for (const key of Object.keys(previous)) if (key.startsWith('provider/')) delete providers[key.slice(9)]
  const manifest: Record<string, ManifestEntry> = {}
  for (const item of items) {
    for (const [name, entry] of Object.entries(item.provider)) {
      providers[name] = entry
      manifest[`provider/${name}`] = {
        sha256: mcpDigest(entry),
        objectId: item.objectId,
        versionId: item.versionId,
        type: item.type,
        name: item.name,
      }
    }
  }
  const next: Record<string, unknown> = { ...current, provider: providers }
  if (!Object.keys(providers).length) delete next.provider
  const nextText = `${JSON.stringify(next, null, 2)}\n`
  const changed = sha256Hex(nextText) !== sha256Hex(text) && (text !== '' || Object.keys(providers).length > 0)
  if (changed) {
    await ensureDir(dirname(file), 0o700)
    await writeFileAtomic(file, nextText, { mode: 0o600 })
  }
  return { manifest, changed }
}
