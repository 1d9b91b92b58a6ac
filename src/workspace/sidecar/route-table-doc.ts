/**
 * Renders the allow-list as the Markdown table in `docs/sidecar-proxy.md`, between two marker
 * comments. A test compares the file with this rendering, so the document cannot drift from the
 * table the proxy enforces; run this file with `--write` to refresh the document after a change.
 * @module
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { SIDECAR_ROUTES } from './route-table.ts'
import { pinningOf } from './sidecar-routes.ts'

/** Start and end markers of the generated section. */
export const DOC_MARKERS = ['<!-- sidecar-allow-list:start -->', '<!-- sidecar-allow-list:end -->'] as const

/** The docs file holding the generated table. */
export const DOC_PATH = resolve(
  import.meta.dirname ?? new URL('.', import.meta.url).pathname,
  '../../../docs/sidecar-proxy.md',
)

const ROLE_LABEL = { viewer: 'viewer', collaborator: 'collaborator', owner: 'owner/host' } as const

/** The generated Markdown (without markers). */
export function renderAllowList(): string {
  const lines = [
    '| Method | OpenCode path | Role | Changes state | Pinning | Governance | Kind | Note |',
    '| ------ | ------------- | ---- | ------------- | ------- | ---------- | ---- | ---- |',
  ]
  for (const entry of SIDECAR_ROUTES) {
    const cells = [
      entry.method,
      `\`${entry.path}\``,
      ROLE_LABEL[entry.role],
      entry.changesState ? 'yes' : 'no',
      pinningOf(entry),
      entry.governance === 'approval' ? 'host approval, audited' : entry.governance === 'audited' ? 'audited' : '',
      entry.kind === 'sse' ? 'event stream' : entry.kind === 'websocket' ? 'WebSocket' : '',
      entry.note ?? '',
    ]
    lines.push(`| ${cells.join(' | ')} |`)
  }
  return lines.join('\n')
}

/** The document with its generated section replaced by the current rendering. */
export function withRenderedAllowList(document: string): string {
  const start = document.indexOf(DOC_MARKERS[0])
  const end = document.indexOf(DOC_MARKERS[1])
  if (start < 0 || end < start) throw new Error(`${DOC_PATH} lacks the allow-list markers`)
  return `${document.slice(0, start + DOC_MARKERS[0].length)}\n${renderAllowList()}\n${document.slice(end)}`
}

if (import.meta.main && process.argv.includes('--write')) {
  writeFileSync(DOC_PATH, withRenderedAllowList(readFileSync(DOC_PATH, 'utf8')))
}
