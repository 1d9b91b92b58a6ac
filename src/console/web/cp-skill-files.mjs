// A skill's files beside SKILL.md: listed (path, size, executable, sha-256) with text shown on
// demand, and a working copy an editor changes (add by upload or paste, replace, remove, toggle
// executable). A new version sends the working copy whole, so every file it does not touch is
// kept byte for byte.
import { errorBox, field, h, mount, scroller } from './dom.mjs'

const fromBase64 = (b64) => Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))
const toBase64 = (bytes) => {
  let text = ''
  for (let i = 0; i < bytes.length; i += 0x8000) text += String.fromCharCode(...bytes.subarray(i, i + 0x8000))
  return btoa(text)
}
/** A version's file (`content` for UTF-8 text, else `contentBase64`) as bytes. */
const bytesOf = (file) =>
  file.content !== undefined ? new TextEncoder().encode(file.content) : fromBase64(file.contentBase64 ?? '')
/** A byte count as people read it. */
export const sizeText = (n) => (n < 1024 ? `${n} B` : `${(n / 1024).toFixed(1)} KB`)

async function sha256(bytes) {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes))
  return Array.from(digest, (b) => b.toString(16).padStart(2, '0')).join('')
}

/** A file as the working copy holds it: `{path, bytes, executable, sha256, text}` (text null when binary). */
async function entry(path, bytes, executable) {
  let text = null
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes)
  } catch {
    text = null
  }
  return { path, bytes, executable, sha256: await sha256(bytes), text }
}

/** The working copy of a version's files. */
export function filesOf(version) {
  return Promise.all((version.files ?? []).map((f) => entry(f.path, bytesOf(f), f.executable === true)))
}

/** The files as `input.files` sends them (base64, so any bytes pass unchanged). */
export function filesInput(files) {
  return files.map((f) => ({ path: f.path, contentBase64: toBase64(f.bytes), executable: f.executable }))
}

/** A table of files; `actions(file)` adds a last cell (the editor's buttons). */
function fileTable(files, label, shown, actions) {
  const view = (file) =>
    mount(
      shown,
      file.text === null
        ? h('p', { class: 'muted' }, `${file.path} is binary (${sizeText(file.bytes.length)}); it is not shown.`)
        : h('pre', { class: 'json', tabindex: '0', 'aria-label': `Content of ${file.path}` }, file.text),
    )
  return scroller(
    label,
    h(
      'table',
      null,
      h('caption', { class: 'visually-hidden' }, label),
      h(
        'thead',
        null,
        h(
          'tr',
          null,
          ['Path', 'Size', 'Executable', 'SHA-256', ''].map((t) => h('th', { scope: 'col' }, t)),
        ),
      ),
      h(
        'tbody',
        null,
        files.length
          ? files.map((file) =>
              h(
                'tr',
                { dataset: { path: file.path } },
                h('td', null, h('code', null, file.path)),
                h('td', null, sizeText(file.bytes.length)),
                h('td', null, file.executable ? 'yes' : 'no'),
                h('td', null, h('code', { title: file.sha256 }, `${file.sha256.slice(0, 12)}…`)),
                h(
                  'td',
                  { class: 'row' },
                  h('button', { type: 'button', 'aria-label': `View ${file.path}`, onclick: () => view(file) }, 'View'),
                  actions ? actions(file) : null,
                ),
              ),
            )
          : h('tr', null, h('td', { colspan: '5' }, 'No files beside SKILL.md.')),
      ),
    ),
  )
}

/** A version's files, read only. */
export function filesView(version) {
  const node = h('div', null, h('p', { class: 'muted' }, 'Loading files…'))
  const shown = h('div')
  filesOf(version).then(
    (files) => mount(node, fileTable(files, `Files of version ${version.number}`, shown), shown),
    (error) => mount(node, errorBox(error)),
  )
  return node
}

/**
 * The editor's working copy of the files: `files()` is what "Save as a new version" sends.
 * Paths are checked by the server (422 naming the path), so the editor only refuses duplicates.
 */
export function filesEditor(version) {
  let files = []
  const node = h('div')
  const shown = h('div')
  const status = h('div', { 'aria-live': 'polite' })
  const path = h('input', { name: 'filePath', type: 'text', autocomplete: 'off', placeholder: 'scripts/run.sh' })
  const upload = h('input', { name: 'fileUpload', type: 'file' })
  const paste = h('textarea', { name: 'fileText', rows: '4', spellcheck: 'false' })
  const executable = h('input', { name: 'fileExecutable', type: 'checkbox' })
  // Enter in the path adds the file; it must not submit the version form around it without it.
  path.addEventListener('keydown', (event) => {
    if (event.key !== 'Enter') return
    event.preventDefault()
    void add()
  })
  const put = async (file) => {
    files = [...files.filter((f) => f.path !== file.path), file].sort((a, b) => (a.path < b.path ? -1 : 1))
    render()
  }
  const pick = (onBytes) => {
    const input = h('input', { type: 'file', hidden: true })
    input.addEventListener('change', async () => {
      const chosen = input.files?.[0]
      if (chosen) await onBytes(new Uint8Array(await chosen.arrayBuffer()))
      input.remove()
    })
    node.append(input)
    input.click()
  }
  const actions = (file) => [
    h(
      'button',
      {
        type: 'button',
        'aria-label': `${file.executable ? 'Clear' : 'Set'} executable on ${file.path}`,
        onclick: () => put({ ...file, executable: !file.executable }),
      },
      file.executable ? 'Clear executable' : 'Set executable',
    ),
    h(
      'button',
      {
        type: 'button',
        'aria-label': `Replace ${file.path}`,
        onclick: () => pick(async (bytes) => put(await entry(file.path, bytes, file.executable))),
      },
      'Replace',
    ),
    h(
      'button',
      {
        type: 'button',
        class: 'danger',
        'aria-label': `Remove ${file.path}`,
        onclick: () => {
          files = files.filter((f) => f !== file)
          mount(shown)
          render()
        },
      },
      'Remove',
    ),
  ]
  const add = async () => {
    const name = path.value.trim()
    const chosen = upload.files?.[0]
    if (!name) return mount(status, errorBox({ message: 'Give the file a path, such as scripts/run.sh.' }))
    if (!chosen && !paste.value)
      return mount(status, errorBox({ message: 'Choose a file to upload or paste its text.' }))
    const bytes = chosen ? new Uint8Array(await chosen.arrayBuffer()) : new TextEncoder().encode(paste.value)
    const replaced = files.some((f) => f.path === name)
    await put(await entry(name, bytes, executable.checked))
    mount(status, h('p', { role: 'status' }, `${replaced ? 'Replaced' : 'Added'} ${name}; save to keep it.`))
    path.value = ''
    upload.value = ''
    paste.value = ''
    executable.checked = false
  }
  // Only the table is redrawn, so the add form keeps its state (open, typed text) across changes.
  const table = h('div')
  const render = () => mount(table, fileTable(files, 'Files of the new version', shown, actions))
  node.append(
    table,
    shown,
    h(
      'details',
      null,
      h('summary', null, 'Add or replace a file'),
      field('File path', path, 'Relative to the skill folder; an existing path is replaced.'),
      field('Upload', upload),
      field('Or paste its text', paste),
      h('label', { class: 'row' }, executable, 'Executable (mode 0755)'),
      h('button', { type: 'button', onclick: () => void add() }, 'Add file'),
      status,
    ),
  )
  const ready = filesOf(version).then((loaded) => {
    files = loaded
    render()
  })
  return { node, ready, files: () => files }
}
