// Workspace host console: sign-in (one-time link or host token), the shell and its pages.
import { createApi } from './api.mjs'
import { announce, errorBox, field, h, mount } from './dom.mjs'
import { auditPage, eventsPage, sidecarPage } from './ws-activity.mjs'
import { approvalsPage, createApprovalStore } from './ws-approvals.mjs'
import { tokensPage } from './ws-tokens.mjs'
import { workspacePage } from './ws-workspace.mjs'

// Per tab and gone when the tab closes; the server forgets every session when it restarts.
const SESSION_KEY = 'service-console.workspace-session'

const PAGES = [
  ['approvals', 'Approvals'],
  ['tokens', 'Tokens'],
  ['workspaces', 'Workspaces'],
  ['audit', 'Audit log'],
  ['events', 'Events'],
  ['sidecar', 'Sidecar'],
]

let session = null
let store = null
let current = null

const api = createApi({
  headers: () => (session ? { authorization: `Bearer ${session.token}` } : {}),
  onUnauthorized: () => {
    // Only a live session can end; a failed sign-in reports its own error.
    if (session) signedOut('The session ended (the server restarted, it expired, or it was signed out).')
  },
})

function saveSession(value) {
  session = value
  if (value) sessionStorage.setItem(SESSION_KEY, JSON.stringify(value))
  else sessionStorage.removeItem(SESSION_KEY)
}

function loadSession() {
  try {
    const saved = JSON.parse(sessionStorage.getItem(SESSION_KEY) ?? 'null')
    return saved && typeof saved.token === 'string' && saved.expiresAt > Date.now() ? saved : null
  } catch {
    return null
  }
}

/** Starts the workspace console in `root` (the page's main element). */
export async function start(root) {
  const hash = new URLSearchParams(location.hash.slice(1))
  const code = hash.get('code')
  if (code) {
    // The code works once: take it out of the address bar and history before anything else.
    history.replaceState(null, '', `${location.pathname}${location.search}#approvals`)
    try {
      saveSession(await api.post('/console/sessions', { code }))
    } catch (error) {
      return signIn(root, error)
    }
  } else {
    session = loadSession()
  }
  if (!session) return signIn(root)
  shell(root)
}

function signIn(root, problem) {
  document.title = 'Sign in · workspace console'
  const token = h('input', { type: 'password', autocomplete: 'off', required: true, spellcheck: 'false' })
  const status = h('div', { 'aria-live': 'polite' }, problem ? errorBox(problem) : null)
  const form = h(
    'form',
    {
      class: 'card narrow',
      onsubmit: async (event) => {
        event.preventDefault()
        mount(status, h('p', { class: 'muted' }, 'Signing in…'))
        try {
          const created = await api.post('/console/sessions/host', undefined, {
            'x-service-host-token': token.value.trim(),
          })
          token.value = ''
          saveSession(created)
          shell(root)
        } catch (error) {
          mount(status, errorBox(error))
          token.focus()
        }
      },
    },
    h('h1', null, 'Workspace console'),
    h(
      'p',
      null,
      'Open the one-time link the server printed when it started, or paste the host token. The console keeps a session in this tab only.',
    ),
    field('Host token', token, 'Sent once to this server in exchange for a console session.'),
    h('button', { type: 'submit', class: 'primary' }, 'Sign in'),
    status,
  )
  mount(root, form)
  token.focus()
}

function signedOut(reason) {
  // The shell's page router must not render signed-in pages any more.
  window.onhashchange = null
  store?.close()
  store = null
  current?.dispose?.()
  current = null
  saveSession(null)
  document.querySelector('.top')?.remove()
  document.querySelector('nav.sections')?.remove()
  const root = document.getElementById('main')
  signIn(root, reason ? { message: reason } : undefined)
}

async function signOut() {
  try {
    await api.del('/console/sessions/current')
  } catch {
    // Signing out locally is what matters; the server session expires on its own.
  }
  signedOut()
  announce('Signed out')
}

function shell(root) {
  document.querySelector('.top')?.remove()
  document.querySelector('nav.sections')?.remove()
  const badge = h('span', { class: 'badge', hidden: true })
  const streamState = h('span', { class: 'muted small', role: 'status' })
  const links = PAGES.map(([id, label]) =>
    h('a', { href: `#${id}`, dataset: { page: id } }, label, id === 'approvals' ? badge : null),
  )
  const top = h(
    'header',
    { class: 'top' },
    h('span', { class: 'brand' }, 'service-server', h('span', { class: 'muted' }, ' · workspace')),
    streamState,
    h('button', { type: 'button', onclick: signOut }, 'Sign out'),
  )
  const nav = h('nav', { class: 'sections', 'aria-label': 'Sections' }, links)
  root.before(top, nav)
  store = createApprovalStore(api, (state, detail) => {
    streamState.textContent =
      state === 'open'
        ? 'Live'
        : state === 'retrying'
          ? `Reconnecting… ${detail ?? ''}`
          : detail
            ? `Stopped: ${detail}`
            : ''
  })
  store.subscribe((pending) => {
    badge.hidden = pending.length === 0
    badge.textContent = String(pending.length)
    badge.setAttribute('aria-label', `${pending.length} pending`)
  })
  const render = (moveFocus) => {
    const [page, ...rest] = location.hash.slice(1).split('/')
    const id = PAGES.some(([p]) => p === page) ? page : 'approvals'
    for (const link of links) {
      if (link.dataset.page === id) link.setAttribute('aria-current', 'page')
      else link.removeAttribute('aria-current')
    }
    current?.dispose?.()
    const label = PAGES.find(([p]) => p === id)[1]
    document.title = `${label} · workspace console`
    current = pageFor(id, rest.map(decodeURIComponent))
    mount(root, current.node)
    if (moveFocus) root.focus()
  }
  window.onhashchange = () => render(true)
  render(false)
}

function pageFor(id, rest) {
  switch (id) {
    case 'tokens':
      return tokensPage(api)
    case 'workspaces':
      return workspacePage(api, rest, store)
    case 'audit':
      return auditPage(api, rest)
    case 'events':
      return eventsPage(api, rest)
    case 'sidecar':
      return sidecarPage(api)
    default:
      return approvalsPage(api, store)
  }
}
