/**
 * Plugins: entries of the project config's `plugin` array (a spec, or `[spec, options]`, which
 * edits keep intact) plus plugin files directly in `.opencode/plugins/`. Listed de-duplicated by
 * package name (config first).
 * @module
 */
import { join } from 'node:path'
import { pluginSpecOf } from '../../opencode/opencode-config.ts'
import { removeContained, resolveExisting } from '../base/workspace-path.ts'
import { editOpencodeConfig, readOpencodeConfig } from '../config/opencode-config-file.ts'
import { PLUGINS_DIR, pluginFileNames } from '../config/workspace-layout.ts'
import { workspaceError } from '../workspace-errors.ts'

/** One listed plugin. */
export interface PluginItem {
  spec: string
  source: 'config' | 'dir.project'
  scope: 'project'
  /** Workspace-relative path, for plugin files. */
  path?: string
}

/** `GET /workspace/:id/plugins` body. */
export interface PluginList {
  items: PluginItem[]
  loadOrder: string[]
}

/**
 * The package name a spec refers to: `@scope/name@1.2` → `@scope/name`, `name@1` → `name`;
 * `file:`, `http(s):`, `git:` and absolute paths are kept verbatim.
 */
export function pluginName(spec: string): string {
  const s = spec.trim()
  if (/^(file:|https?:|git(\+[a-z]+)?:)/i.test(s) || s.startsWith('/')) return s
  if (s.startsWith('@')) {
    const at = s.indexOf('@', 1)
    return at > 0 ? s.slice(0, at) : s
  }
  const at = s.indexOf('@')
  return at > 0 ? s.slice(0, at) : s
}

/**
 * The config's plugin entries as OpenCode reads them: specs and `[spec, options]` pairs, in order.
 * A lone string (older configs) counts as one entry.
 */
function pluginEntries(config: Record<string, unknown>): unknown[] {
  const raw = config.plugin
  if (typeof raw === 'string') return [raw]
  return Array.isArray(raw) ? raw.filter((entry) => pluginSpecOf(entry) !== null) : []
}

/** The config's plugin specs (of pairs, the spec alone). */
export function configSpecs(config: Record<string, unknown>): string[] {
  return pluginEntries(config).map((entry) => pluginSpecOf(entry)!)
}

/** The `plugin` array with `spec` appended, unless a plugin of that package is there already. */
export function pluginsWith(config: Record<string, unknown>, spec: string): unknown[] {
  return hasPlugin(config, spec) ? pluginEntries(config) : [...pluginEntries(config), spec]
}

/** The `plugin` array without the entries of `specs`; every other entry keeps its options. */
export function pluginsWithout(config: Record<string, unknown>, specs: string[]): unknown[] {
  return pluginEntries(config).filter((entry) => !specs.includes(pluginSpecOf(entry)!))
}

const stem = (file: string) => file.replace(/\.(js|ts)$/, '')

/**
 * Lists plugins from the (cached) config and the plugin directory. A plugin directory that
 * resolves outside the workspace is refused (400 `invalid_path`), not listed.
 */
export async function listPlugins(root: string, config: Record<string, unknown>): Promise<PluginList> {
  await resolveExisting(root, PLUGINS_DIR)
  const items: PluginItem[] = []
  const seen = new Set<string>()
  for (const spec of configSpecs(config)) {
    const name = pluginName(spec)
    if (seen.has(name)) continue
    seen.add(name)
    items.push({ spec, source: 'config', scope: 'project' })
  }
  for (const file of pluginFileNames(root)) {
    if (seen.has(stem(file))) continue
    seen.add(stem(file))
    const rel = `${PLUGINS_DIR}/${file}`
    items.push({ spec: `file://${join(root, rel)}`, source: 'dir.project', scope: 'project', path: rel })
  }
  return { items, loadOrder: ['config.project', 'dir.project'] }
}

/** Validates a spec from a request; 400 `invalid_plugin_spec` when empty or multi-line. */
export function validatePluginSpec(spec: string): string {
  const s = spec.trim()
  if (!s || /[\r\n]/.test(s) || s.length > 512)
    throw workspaceError('invalid_plugin_spec', 'Plugin spec must be a non-empty single line of at most 512 characters')
  return s
}

/** True when a plugin with the spec's package name is already configured. */
export function hasPlugin(config: Record<string, unknown>, spec: string): boolean {
  const name = pluginName(spec)
  return configSpecs(config).some((s) => pluginName(s) === name)
}

/** Appends a spec to the config's plugin array (fresh from disk); no-op when present. */
export async function addPlugin(root: string, spec: string): Promise<void> {
  const { data } = await readOpencodeConfig(root)
  if (hasPlugin(data, spec)) return
  await editOpencodeConfig(root, [{ path: ['plugin'], value: pluginsWith(data, spec) }])
}

/** What removing `name` would touch: matching config specs and plugin files. */
export async function pluginRemovalPlan(
  root: string,
  config: Record<string, unknown>,
  name: string,
): Promise<{ specs: string[]; files: string[] }> {
  await resolveExisting(root, PLUGINS_DIR)
  const specs = configSpecs(config).filter((s) => pluginName(s) === name || s === name)
  const files = pluginFileNames(root)
    .filter((f) => f === name || stem(f) === name)
    .map((f) => `${PLUGINS_DIR}/${f}`)
  if (specs.length === 0 && files.length === 0) throw workspaceError('plugin_not_found', `Plugin ${name} not found`)
  return { specs, files }
}

/**
 * Removes every config spec with that name and the matching plugin files; files are removed
 * through their pinned parent (400 `invalid_path` when `.opencode/plugins` resolves outside).
 */
export async function removePlugin(root: string, name: string): Promise<void> {
  // Checked before the config edit, so a refused file removal leaves no half-done change.
  await resolveExisting(root, PLUGINS_DIR)
  const { data } = await readOpencodeConfig(root)
  const matching = configSpecs(data).filter((s) => pluginName(s) === name || s === name)
  if (matching.length > 0) await editOpencodeConfig(root, [{ path: ['plugin'], value: pluginsWithout(data, matching) }])
  for (const file of pluginFileNames(root)) {
    if (file === name || stem(file) === name) await removeContained(root, `${PLUGINS_DIR}/${file}`)
  }
}
