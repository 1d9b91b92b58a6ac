/**
 * File reads under the config secret rule (`config/config-secret-view.ts`): the masking of a
 * read-batch for a principal below the owner, and the unmasking of what such a principal writes.
 * @module
 */
import { workspaceConfigSecrets } from '../config/config-secret-view.ts'
import {
  isOpencodeConfigPath,
  maskConfigText,
  maskSecretsIn,
  unmaskConfigText,
} from '../../opencode/mcp-secret-text.ts'
import type { ItemError } from './batch-item.ts'
import type { ReadOk } from './batch-reads.ts'

/** UTF-8 text of `bytes`, or null when they are not valid UTF-8 (a binary file is left alone). */
function utf8(bytes: Buffer): string | null {
  const text = bytes.toString('utf8')
  return Buffer.byteLength(text) === bytes.byteLength && !text.includes('\uFFFD') ? text : null
}

/** Masks, in place, the secrets in the read items (see `FileService.readBatch`). */
export async function maskReadSecrets(root: string, items: Array<ReadOk | ItemError>): Promise<void> {
  const secrets = await workspaceConfigSecrets(root)
  for (const item of items) {
    if (!item.ok) continue
    const isConfig = isOpencodeConfigPath(item.path)
    if (!isConfig && secrets.length === 0) continue
    const text = utf8(Buffer.from(item.contentBase64, 'base64'))
    if (text === null) continue
    const masked = isConfig ? await maskConfigText(text) : maskSecretsIn(text, secrets)
    if (masked === text) continue
    const bytes = Buffer.from(masked, 'utf8')
    item.contentBase64 = bytes.toString('base64')
    item.bytes = bytes.byteLength
  }
}

/**
 * The content a principal below the owner writes to `rel`, with masked MCP secrets put back from
 * `current` (the file's text on disk): saving a masked read must not store the mask.
 */
export async function unmaskWrittenConfig(
  rel: string,
  content: Uint8Array,
  current: string | null,
): Promise<Uint8Array> {
  if (current === null || !isOpencodeConfigPath(rel)) return content
  const text = utf8(Buffer.from(content))
  if (text === null) return content
  const restored = await unmaskConfigText(text, current)
  return restored === text ? content : Buffer.from(restored, 'utf8')
}
