// A workspace's export (downloaded as JSON) and import (preview, then apply once the host allows
// it), each step shown as it happens and ending with what was done or the server's code.
import { ApiFailure } from './api.mjs'
import { announce, errorBox, field, h, mount, section } from './dom.mjs'

const ACTIONS = ['create', 'update', 'replace', 'delete', 'unchanged']
const count = (list, word) => `${list.length} ${word}${list.length === 1 ? '' : 's'}`

function previewList(preview) {
  const s = preview.summary
  const counts = ACTIONS.filter((a) => s[a]).map((a) => `${s[a]} ${a}`)
  const changed = preview.changes.filter((c) => c.action !== 'unchanged')
  return h(
    'div',
    null,
    h('p', null, counts.length ? `${s.total} entries: ${counts.join(', ')}.` : 'The archive is empty.'),
    changed.length
      ? h(
          'ul',
          { class: 'plain', 'aria-label': 'Changes the import makes' },
          changed.map((c) =>
            h('li', null, h('span', { class: 'pill' }, c.action), ` ${c.kind} `, h('code', null, c.path || c.label)),
          ),
        )
      : null,
  )
}

/** Steps of a long operation: each line is done, running or failed, the last one live. */
function steps() {
  const list = h('ol', { class: 'steps', 'aria-live': 'polite' })
  let current = null
  return {
    node: list,
    start(text) {
      if (current) current.className = 'done'
      current = h('li', { class: 'running' }, text)
      list.append(current)
    },
    end(className) {
      if (current) current.className = className
      current = null
    },
    reset() {
      list.replaceChildren()
      current = null
    },
  }
}

function exportPart(api, ws) {
  const sensitive = h(
    'select',
    { name: 'sensitive' },
    h('option', { value: 'auto' }, 'Ask me when secrets are found'),
    h('option', { value: 'exclude' }, 'Leave secrets out'),
    h('option', { value: 'include' }, 'Keep secrets in the file'),
  )
  const out = h('div', { 'aria-live': 'polite' })
  const button = h(
    'button',
    {
      type: 'button',
      onclick: async () => {
        button.disabled = true
        mount(out, h('p', { class: 'muted' }, 'Exporting…'))
        try {
          const doc = await api.get(
            `/workspace/${encodeURIComponent(ws.id)}/export?sensitive=${encodeURIComponent(sensitive.value)}`,
          )
          const blob = new Blob([JSON.stringify(doc, null, 2)], { type: 'application/json' })
          const url = URL.createObjectURL(blob)
          const name = `${ws.id}-export.json`
          const link = h('a', { href: url, download: name }, `Download ${name} again`)
          mount(
            out,
            h(
              'p',
              { role: 'status' },
              `Exported ${count(doc.skills, 'skill')}, ${count(doc.commands, 'command')} and ${count(doc.files, 'file')} (${Math.ceil(blob.size / 1024)} KB). `,
              link,
            ),
          )
          link.click()
          announce('Export ready')
        } catch (error) {
          const warnings = error.details?.warnings
          mount(
            out,
            errorBox(error),
            Array.isArray(warnings)
              ? h(
                  'p',
                  null,
                  'Choose "Leave secrets out" or "Keep secrets in the file" and export again. Found: ',
                  warnings
                    .map((w) => (typeof w === 'string' ? w : (w.path ?? w.message ?? JSON.stringify(w))))
                    .join('; '),
                )
              : null,
          )
        } finally {
          button.disabled = false
        }
      },
    },
    'Export',
  )
  return h(
    'div',
    { class: 'card' },
    h('h3', null, 'Export'),
    field('Secrets', sensitive, 'Secrets in MCP headers and environments are always left out.'),
    button,
    out,
  )
}

function importPart(api, store, ws) {
  const base = `/workspace/${encodeURIComponent(ws.id)}`
  const file = h('input', { name: 'importFile', type: 'file', accept: '.json,application/json' })
  const progress = steps()
  const out = h('div', { 'aria-live': 'polite' })
  const previewButton = h('button', { type: 'button' }, 'Preview import')
  let unsubscribe = null
  const finish = () => {
    unsubscribe?.()
    unsubscribe = null
    previewButton.disabled = false
  }

  const apply = async (payload, preview) => {
    mount(out)
    progress.start('Waiting for the host to allow the import…')
    // The host is whoever holds this console: offer the decision here as well as on Approvals.
    const decision = h('div', { class: 'row' })
    out.append(decision)
    unsubscribe = store?.subscribe((pending) => {
      const mine = pending.find((a) => a.workspaceId === ws.id && a.action === 'config.import')
      if (!mine) return mount(decision)
      const reply = (choice) => async () => {
        try {
          await api.post(`/approvals/${encodeURIComponent(mine.id)}`, { reply: choice })
          store.forget(mine.id)
        } catch (error) {
          mount(decision, errorBox(error))
        }
      }
      mount(
        decision,
        h('span', null, mine.summary),
        h('button', { type: 'button', class: 'primary', onclick: reply('allow') }, 'Allow import'),
        h('button', { type: 'button', class: 'danger', onclick: reply('deny') }, 'Deny import'),
      )
    })
    try {
      const done = await api.post(`${base}/import`, { ...payload, previewFingerprint: preview.fingerprint })
      progress.end('done')
      const s = done.preview.summary
      mount(
        out,
        h(
          'p',
          { role: 'status' },
          h('span', { class: 'pill ok' }, 'imported'),
          ` ${s.total - s.unchanged} changes applied (${s.create} created, ${s.update + s.replace} updated, ${s.delete} deleted).`,
        ),
      )
      announce('Import applied')
    } catch (error) {
      progress.end('failed')
      mount(out, errorBox(error))
      announce('Import not applied')
    } finally {
      finish()
    }
  }

  previewButton.addEventListener('click', async () => {
    const chosen = file.files?.[0]
    if (!chosen) return mount(out, errorBox({ message: 'Choose an export file first.' }))
    previewButton.disabled = true
    progress.reset()
    mount(out)
    try {
      progress.start(`Reading ${chosen.name}…`)
      let doc
      try {
        doc = JSON.parse(await chosen.text())
      } catch (error) {
        throw new ApiFailure(0, 'invalid_json', `${chosen.name} is not JSON: ${error.message}`)
      }
      // An export carries where it came from; the import takes only the configuration.
      const { workspaceId: _from, exportedAt: _at, ...payload } = doc ?? {}
      progress.start('Comparing with the workspace…')
      const preview = await api.post(`${base}/import/preview`, payload)
      progress.end('done')
      const changes = preview.summary.total - preview.summary.unchanged
      mount(
        out,
        previewList(preview),
        changes
          ? h(
              'button',
              {
                type: 'button',
                class: 'primary',
                onclick: (event) => {
                  event.currentTarget.disabled = true
                  previewButton.disabled = true
                  void apply(payload, preview)
                },
              },
              `Import ${changes} change${changes === 1 ? '' : 's'}`,
            )
          : h('p', { role: 'status' }, 'Nothing to import: the workspace already matches.'),
      )
    } catch (error) {
      progress.end('failed')
      mount(out, errorBox(error))
    } finally {
      if (!unsubscribe) previewButton.disabled = false
    }
  })

  return {
    node: h(
      'div',
      { class: 'card' },
      h('h3', null, 'Import'),
      field(
        'Export file',
        file,
        'A file from Export (this or another workspace). You see every change before it is made.',
      ),
      previewButton,
      progress.node,
      out,
    ),
    dispose: () => unsubscribe?.(),
  }
}

/** The export and import tab of one workspace. */
export function portabilityTab(api, store, ws) {
  const importer = importPart(api, store, ws)
  return {
    node: section('Export and import', exportPart(api, ws), importer.node),
    dispose: importer.dispose,
  }
}
