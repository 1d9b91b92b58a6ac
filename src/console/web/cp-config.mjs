// Config objects: filter and search (keyset pages), view a version, compare two, create and edit
// with the validation errors beside their fields, archive and restore.
import { withQuery } from './api.mjs'
import { diffBlock, fileChangesBlock } from './cp-diff.mjs'
import { all, pagedTable } from './cp-org.mjs'
import { filesEditor, filesInput, filesView } from './cp-skill-files.mjs'
import { announce, errorBox, field, h, jsonBlock, mount, section, showFieldErrors, when } from './dom.mjs'

const TYPES = ['skill', 'agent', 'command', 'tool', 'mcp', 'hook', 'context', 'custom']
const STATES = ['active', 'archived', 'deleted']

/** The text a version is compared and edited as: its source, else its normalized payload. */
const textOf = (version) => version.rawSourceText ?? JSON.stringify(version.normalizedPayload, null, 2)

function objectView(api, id, can, onChange) {
  const node = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'))
  const load = async () => {
    try {
      const [{ item }, versions] = await Promise.all([
        api.get(`/v1/config-objects/${id}`),
        all(api, `/v1/config-objects/${id}/versions`),
      ])
      versions.sort((x, y) => y.number - x.number)
      const latest = versions[0]
      const status = h('div', { 'aria-live': 'polite' })
      const pick = (label, selected) =>
        h(
          'select',
          { 'aria-label': label },
          versions.map((v) =>
            h('option', { value: v.id, selected: v.id === selected }, `v${v.number} · ${when(v.createdAt)}`),
          ),
        )
      const shown = h('div')
      const viewPick = pick('Version to view', latest?.id)
      const showVersion = () => {
        const version = versions.find((v) => v.id === viewPick.value)
        if (!version) return mount(shown)
        mount(
          shown,
          version.rawSourceText !== null
            ? h(
                'pre',
                { class: 'json', tabindex: '0', 'aria-label': `Version ${version.number} source` },
                version.rawSourceText,
              )
            : jsonBlock(version.normalizedPayload, `Version ${version.number} payload`),
          item.type === 'skill' ? [h('h5', null, 'Files'), filesView(version)] : null,
        )
      }
      viewPick.addEventListener('change', showVersion)
      showVersion()
      const fromPick = pick('Compare from', versions[1]?.id ?? latest?.id)
      const toPick = pick('Compare to', latest?.id)
      const compared = h('div')
      const compare = () => {
        const from = versions.find((v) => v.id === fromPick.value)
        const to = versions.find((v) => v.id === toPick.value)
        if (from && to)
          mount(
            compared,
            diffBlock(textOf(from), textOf(to), `Changes from v${from.number} to v${to.number}`),
            item.type === 'skill'
              ? fileChangesBlock(from, to, `File changes from v${from.number} to v${to.number}`)
              : null,
          )
      }
      const lifecycle = []
      const move = (action, label) =>
        h(
          'button',
          {
            type: 'button',
            class: action === 'archive' ? 'danger' : '',
            onclick: async () => {
              try {
                await api.post(`/v1/config-objects/${id}/${action}`)
                announce(`${item.title}: ${label.toLowerCase()}d`)
                await load()
                onChange()
              } catch (error) {
                mount(status, errorBox(error))
              }
            },
          },
          label,
        )
      if (can('config_objects.write')) {
        if (item.status === 'active') lifecycle.push(move('archive', 'Archive'))
        else lifecycle.push(move('restore', 'Restore'))
      }
      let editor = null
      if (can('config_objects.write') && item.status !== 'deleted' && latest) {
        const source = h('textarea', { name: 'input', rows: '10', spellcheck: 'false', value: textOf(latest) })
        const reason = h('input', { name: 'reason', type: 'text', autocomplete: 'off' })
        // A skill's files are sent whole (every file the editor did not change, unchanged).
        const files = item.type === 'skill' ? filesEditor(latest) : null
        editor = h(
          'form',
          {
            class: 'card',
            novalidate: true,
            onsubmit: async (event) => {
              event.preventDefault()
              try {
                const input =
                  latest.rawSourceText !== null
                    ? { rawSourceText: source.value }
                    : { normalizedPayload: JSON.parse(source.value) }
                if (files) {
                  await files.ready
                  input.files = filesInput(files.files())
                }
                const body = { input, baseVersionId: latest.id }
                if (reason.value.trim()) body.reason = reason.value.trim()
                const created = await api.post(`/v1/config-objects/${id}/versions`, body)
                announce(`Saved version ${created.item.number}`)
                await load()
                onChange()
              } catch (error) {
                showFieldErrors(editor, error)
                mount(
                  status,
                  errorBox(error instanceof SyntaxError ? { message: `Not JSON: ${error.message}` } : error),
                )
              }
            },
          },
          field(latest.rawSourceText !== null ? 'Source' : 'Payload (JSON)', source),
          files ? h('fieldset', null, h('legend', null, 'Files beside SKILL.md'), files.node) : null,
          field('Reason for the change', reason, 'Optional; kept with the version.'),
          h('button', { type: 'submit', class: 'primary' }, 'Save as a new version'),
        )
      }
      mount(
        node,
        h(
          'div',
          { class: 'card' },
          h('h3', null, item.title),
          item.description ? h('p', null, item.description) : null,
          h(
            'dl',
            { class: 'facts' },
            h('dt', null, 'Type'),
            h('dd', null, item.type),
            h('dt', null, 'Status'),
            h('dd', null, item.status),
            h('dt', null, 'Name'),
            h('dd', null, h('code', null, item.name)),
            h('dt', null, 'Versions'),
            h('dd', null, String(item.versionCount)),
          ),
          lifecycle.length ? h('div', { class: 'row' }, lifecycle) : null,
          status,
          h('h4', null, 'View a version'),
          viewPick,
          shown,
          versions.length > 1
            ? [
                h('h4', null, 'Compare two versions'),
                h(
                  'div',
                  { class: 'row' },
                  fromPick,
                  toPick,
                  h('button', { type: 'button', onclick: compare }, 'Compare'),
                ),
                compared,
              ]
            : null,
          editor ? [h('h4', null, 'Edit'), editor] : null,
        ),
      )
    } catch (error) {
      mount(node, errorBox(error))
    }
  }
  void load()
  return node
}

/** The config objects page. */
export function configPage({ api, can }) {
  const detail = h('div')
  const type = h(
    'select',
    { name: 'type' },
    h('option', { value: '' }, 'Any type'),
    TYPES.map((t) => h('option', { value: t }, t)),
  )
  const status = h(
    'select',
    { name: 'status' },
    h('option', { value: '' }, 'Active and archived'),
    STATES.map((s) => h('option', { value: s }, s)),
  )
  const q = h('input', { name: 'q', type: 'search', autocomplete: 'off', maxlength: '255' })
  const listHolder = h('div')
  let table = null
  const open = (item) => {
    mount(
      detail,
      section(
        `Config object: ${item.title}`,
        objectView(api, item.id, can, () => table?.reload()),
      ),
    )
    detail.querySelector('h2')?.setAttribute('tabindex', '-1')
    detail.querySelector('h2')?.focus()
  }
  const showList = () => {
    const path = withQuery('/v1/config-objects', { type: type.value, status: status.value, q: q.value.trim() })
    table = pagedTable(api, path, 'Config objects', ['Title', 'Type', 'Status', 'Versions', 'Updated'], (item) => [
      h('button', { type: 'button', class: 'link', onclick: () => open(item) }, item.title),
      item.type,
      item.status,
      String(item.versionCount),
      when(item.updatedAt),
    ])
    mount(listHolder, table.node)
  }
  const filters = h(
    'form',
    {
      class: 'grid filters',
      role: 'search',
      onsubmit: (event) => {
        event.preventDefault()
        showList()
      },
    },
    field('Type', type),
    field('Status', status),
    field('Search', q, 'Every word matches the start of a word in the title, description or content.'),
    h('div', { class: 'field end' }, h('button', { type: 'submit' }, 'Apply')),
  )
  let form = null
  if (can('config_objects.write')) {
    const createStatus = h('div', { 'aria-live': 'polite' })
    const newType = h(
      'select',
      { name: 'type' },
      TYPES.map((t) => h('option', { value: t }, t)),
    )
    const title = h('input', { name: 'title', type: 'text', autocomplete: 'off' })
    const description = h('input', { name: 'description', type: 'text', autocomplete: 'off' })
    const source = h('textarea', { name: 'input', rows: '8', spellcheck: 'false' })
    form = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          try {
            const body = {
              type: newType.value,
              sourceMode: 'cloud',
              title: title.value,
              input: { rawSourceText: source.value },
            }
            if (description.value.trim()) body.description = description.value.trim()
            const created = await api.post('/v1/config-objects', body)
            showFieldErrors(form, null)
            mount(createStatus, h('p', null, `Created ${created.item.title}.`))
            title.value = ''
            description.value = ''
            source.value = ''
            showList()
            open(created.item)
          } catch (error) {
            showFieldErrors(form, error)
            mount(createStatus, errorBox(error))
          }
        },
      },
      h('div', { class: 'grid' }, field('Type', newType), field('Title', title), field('Description', description)),
      field('Source', source, 'A SKILL.md, command or agent markdown, MCP server JSON, a module, markdown or JSON.'),
      h('button', { type: 'submit', class: 'primary' }, 'Create'),
      createStatus,
    )
  }
  showList()
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Config objects'),
      form ? h('details', null, h('summary', null, 'Create a config object'), form) : null,
      section('Find', filters, listHolder),
      detail,
    ),
  }
}
