/**
 * One rule for every path that hands out the content of `opencode.json(c)`: a principal below the
 * owner (viewer and collaborator tokens, the configured client token) reads MCP header and
 * environment values, OAuth secrets and URL credentials as `********`, the mask `GET …/config`
 * applies; the host and owner-scoped tokens read the file as it is. Used by file reads (read-batch)
 * and the sidecar's config, file, diff and search answers; the masked values are put back when
 * such a principal writes the file through a file session (`unmaskConfigText`).
 * @module
 */
import { statSync } from 'node:fs'
import { join } from 'node:path'
import type { Principal } from '../access/auth.ts'
import { readContainedText } from '../base/workspace-path.ts'
import { configSecrets } from '../../opencode/mcp-secret-text.ts'
import { OPENCODE_CONFIG_FILES } from './workspace-layout.ts'

/** True when `principal` may read MCP secrets in clear (the host, or an owner-scoped token). */
export function seesConfigSecrets(principal: Principal): boolean {
  return principal.type === 'host' || principal.scope === 'owner'
}

type Secrets = Array<{ secret: string; mask: string }>

/**
 * The last secrets read per workspace, with the stat stamp of both config files. Why: every
 * read-batch of the configured client token (a collaborator) asks, and a stat of two names costs
 * far less than reading and parsing them again (the read-batch bench).
 */
const cache = new Map<string, { stamp: string; secrets: Secrets }>()

function stampOf(root: string): string {
  return OPENCODE_CONFIG_FILES.map((rel) => {
    const st = statSync(join(root, rel), { throwIfNoEntry: false })
    return st ? `${st.ino}:${st.size}:${st.mtimeMs}:${st.ctimeMs}` : '-'
  }).join('|')
}

/** The secrets of the project config files under `root` (both names: OpenCode reads either). */
export async function workspaceConfigSecrets(root: string): Promise<Secrets> {
  const stamp = stampOf(root)
  const cached = cache.get(root)
  if (cached?.stamp === stamp) return cached.secrets
  const out: Secrets = []
  for (const rel of OPENCODE_CONFIG_FILES) {
    const text = await readContainedText(root, rel).catch(() => null)
    if (text !== null) out.push(...(await configSecrets(text)))
  }
  const secrets = out.sort((a, b) => b.secret.length - a.secret.length)
  if (cache.size > 64) cache.clear()
  cache.set(root, { stamp, secrets })
  return secrets
}
