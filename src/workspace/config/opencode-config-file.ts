/**
 * The workspace's project config file (`opencode.jsonc`, else `opencode.json`): reading it, and
 * writing edits back as JSONC text edits so comments and formatting survive.
 * Reads and writes are contained like the file data plane's (`readContainedText`, `writeContained`).
 * @module
 */
import { writeContained } from '../base/atomic-write.ts'
import { readContainedText } from '../base/workspace-path.ts'
import { parseJsoncObject, setJsoncPath } from './jsonc-document.ts'
import { OPENCODE_CONFIG_FILES } from './workspace-layout.ts'

/** The project config as found on disk. */
export interface OpencodeConfigFile {
  /** Relative path of the file in use, or of the one a first write will create. */
  rel: string
  exists: boolean
  text: string
  data: Record<string, unknown>
}

/** Reads and parses the project config; 422 `invalid_jsonc` when it does not parse. */
export async function readOpencodeConfig(root: string): Promise<OpencodeConfigFile> {
  for (const rel of OPENCODE_CONFIG_FILES) {
    const text = await readContainedText(root, rel)
    if (text !== null) return { rel, exists: true, text, data: await parseJsoncObject(text, rel) }
  }
  return { rel: 'opencode.json', exists: false, text: '', data: {} }
}

/** Relative path of the config file a write would touch. */
export async function opencodeConfigRel(root: string): Promise<string> {
  for (const rel of OPENCODE_CONFIG_FILES) {
    if ((await readContainedText(root, rel)) !== null) return rel
  }
  return 'opencode.json'
}

/**
 * The project config after path edits (fresh from disk), not written: what a write would leave,
 * for the approval's description. `undefined` removes a path.
 */
export async function editedOpencodeConfig(
  root: string,
  edits: Array<{ path: Array<string | number>; value: unknown }>,
): Promise<{ rel: string; text: string; data: Record<string, unknown> }> {
  const current = await readOpencodeConfig(root)
  let text = current.text
  for (const edit of edits) text = await setJsoncPath(text, edit.path, edit.value)
  return { rel: current.rel, text, data: await parseJsoncObject(text, current.rel) }
}

/** The same, as the one-file change a gated write proposes (see `GatedWrite.changes`). */
export async function configChange(
  root: string,
  edits: Array<{ path: Array<string | number>; value: unknown }>,
): Promise<Array<{ path: string; after: string }>> {
  const next = await editedOpencodeConfig(root, edits)
  return [{ path: next.rel, after: next.text }]
}

/**
 * Applies path edits to the project config (fresh from disk) and writes it atomically.
 * `undefined` removes a path. Returns the parsed result.
 */
export async function editOpencodeConfig(
  root: string,
  edits: Array<{ path: Array<string | number>; value: unknown }>,
): Promise<Record<string, unknown>> {
  const next = await editedOpencodeConfig(root, edits)
  await writeContained(root, next.rel, next.text)
  return next.data
}
