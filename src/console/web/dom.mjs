// DOM helpers. Every node is built with createElement/textContent, never from HTML strings, so
// nothing a server or a user typed can become markup or script.

/**
 * Creates an element. `props`: attributes, `class`, `on<event>` listeners, `dataset`, and the
 * properties `value`, `checked`, `disabled`, `hidden`. Children: nodes, strings, arrays, or
 * null/false (skipped).
 */
export function h(tag, props, ...children) {
  const el = document.createElement(tag)
  for (const [key, value] of Object.entries(props ?? {})) {
    if (value === undefined || value === null || value === false) continue
    if (key.startsWith('on') && typeof value === 'function') el.addEventListener(key.slice(2).toLowerCase(), value)
    else if (key === 'value' || key === 'checked' || key === 'disabled' || key === 'hidden') el[key] = value
    else if (key === 'dataset') Object.assign(el.dataset, value)
    else el.setAttribute(key, value === true ? '' : String(value))
  }
  append(el, children)
  return el
}

function append(el, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue
    if (Array.isArray(child)) append(el, child)
    else el.append(child instanceof Node ? child : String(child))
  }
}

/** Replaces an element's content. */
export function mount(el, ...children) {
  el.replaceChildren()
  append(el, children)
  return el
}

/** Tells screen readers about something that changed outside the focus. */
export function announce(message) {
  const live = document.getElementById('live')
  if (!live) return
  live.textContent = ''
  // A separate task, so the same message twice is announced twice.
  setTimeout(() => {
    live.textContent = message
  }, 50)
}

/** A readable date and time for epoch milliseconds or an ISO string. */
export function when(value) {
  if (value === null || value === undefined) return '—'
  const date = new Date(value)
  return Number.isNaN(date.getTime()) ? String(value) : date.toLocaleString()
}

/** An error the way the server said it: message and code (and field issues when present). */
export function errorBox(error) {
  const issues = error?.details?.issues
  return h(
    'div',
    { class: 'error', role: 'alert' },
    h('strong', null, error?.status === 403 ? 'Not allowed: ' : 'Error: '),
    error?.message ?? String(error),
    error?.code ? h('code', { class: 'code' }, error.code) : null,
    Array.isArray(issues) && issues.length
      ? h(
          'ul',
          null,
          issues.map((issue) => h('li', null, `${issue.path || 'body'}: ${issue.message}`)),
        )
      : null,
  )
}

/** A secret shown once: the value, a copy button, and a warning that it will not be shown again. */
export function shownOnce(label, value) {
  const field = h('input', { class: 'secret', readonly: true, value, 'aria-label': label, spellcheck: 'false' })
  const status = h('span', { class: 'muted', role: 'status' })
  return h(
    'div',
    { class: 'once' },
    h('p', null, h('strong', null, `${label}: `), 'copy it now, it will not be shown again.'),
    h(
      'div',
      { class: 'row' },
      field,
      h(
        'button',
        {
          type: 'button',
          onclick: async () => {
            field.select()
            try {
              await navigator.clipboard.writeText(value)
              status.textContent = 'Copied'
            } catch {
              status.textContent = 'Selected: press Ctrl+C to copy'
            }
          },
        },
        'Copy',
      ),
      status,
    ),
  )
}

/** A section with a heading, for page layout. */
export function section(title, ...children) {
  const id = `s-${title.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`
  return h('section', { 'aria-labelledby': id }, h('h2', { id }, title), ...children)
}

/** A labelled form control; `control` gets the generated id. */
let fieldCounter = 0
export function field(label, control, hint) {
  const id = control.id || `f${++fieldCounter}`
  control.id = id
  const hintId = hint ? `${id}-hint` : null
  if (hintId) control.setAttribute('aria-describedby', hintId)
  return h(
    'div',
    { class: 'field' },
    h('label', { for: id }, label),
    control,
    hint ? h('small', { id: hintId, class: 'muted' }, hint) : null,
  )
}

/** Secret-looking keys whose values a view never shows. */
const SECRET_KEY = /(secret|token|password|passwd|api[-_]?key|authorization|credential|private[-_]?key|cookie)/i
/** Maps whose every value may be a secret (environment variables, HTTP headers). */
const SECRET_MAPS = new Set(['env', 'environment', 'headers'])

/** A copy of a JSON value with secret-looking values replaced, for display. */
export function maskSecrets(value, key = '') {
  if (Array.isArray(value)) return value.map((item) => maskSecrets(item))
  if (value && typeof value === 'object') {
    const out = {}
    for (const [k, v] of Object.entries(value)) {
      if (SECRET_MAPS.has(k.toLowerCase()) && v && typeof v === 'object' && !Array.isArray(v)) {
        out[k] = Object.fromEntries(Object.keys(v).map((name) => [name, '••••••']))
      } else out[k] = maskSecrets(v, k)
    }
    return out
  }
  if (typeof value === 'string' && SECRET_KEY.test(key) && !/^\{(env|file):/.test(value)) return '••••••'
  return value
}

/** Pretty JSON in a scrollable, focusable block. */
export function jsonBlock(value, label) {
  return h('pre', { class: 'json', tabindex: '0', 'aria-label': label }, JSON.stringify(value, null, 2))
}

/**
 * Puts a 422's `details.issues` next to the controls they concern (matched by the control's
 * `name`), marks them invalid, and returns the issues no control claimed.
 */
export function showFieldErrors(form, error) {
  for (const old of form.querySelectorAll('.field-error')) old.remove()
  for (const control of form.querySelectorAll('[aria-invalid]')) control.removeAttribute('aria-invalid')
  const issues = Array.isArray(error?.details?.issues) ? error.details.issues : []
  const unclaimed = []
  for (const issue of issues) {
    const name = String(issue.path ?? '').split('.')[0]
    const control = name ? form.querySelector(`[name="${CSS.escape(name)}"]`) : null
    if (!control) {
      unclaimed.push(issue)
      continue
    }
    const id = `${control.id}-error`
    control.setAttribute('aria-invalid', 'true')
    // Keep the field's hint described too: the error comes first, the hint after it.
    const hint = (control.getAttribute('aria-describedby') ?? '')
      .split(' ')
      .filter((ref) => ref && !ref.endsWith('-error'))
    control.setAttribute('aria-describedby', [id, ...hint].join(' '))
    control.after(h('small', { id, class: 'field-error' }, issue.message))
  }
  return unclaimed
}

/**
 * A horizontally scrollable box for a wide table: focusable and named, so keyboard users can
 * scroll it too.
 */
export function scroller(label, ...children) {
  return h('div', { class: 'table-wrap', tabindex: '0', role: 'region', 'aria-label': label }, ...children)
}
