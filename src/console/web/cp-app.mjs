// Control-plane console: sign up, sign in, sign out, organizations, and the shell around the
// organization pages. What the member's role may not do is not offered (from GET /v1/me).
import { createApi } from './api.mjs'
import { pluginsPage, providersPage } from './cp-catalog.mjs'
import { configPage } from './cp-config.mjs'
import { connectorsPage } from './cp-connectors.mjs'
import { keysPage } from './cp-keys.mjs'
import { consentPage, devicePage, tokensPage } from './cp-oauth.mjs'
import { skillsPage } from './cp-skills.mjs'
import { workersPage } from './cp-workers.mjs'
import { invitationsPage, membersPage, teamsPage } from './cp-org.mjs'
import { announce, errorBox, field, h, mount, section, showFieldErrors } from './dom.mjs'

const SESSION_KEY = 'service-console.control-plane-session'

const PAGES = [
  ['members', 'Members', 'members.read'],
  ['invitations', 'Invitations', 'invitations.read'],
  ['teams', 'Teams', 'teams.read'],
  ['config', 'Config objects', 'config_objects.read'],
  ['skills', 'Skills', 'skill_hubs.read'],
  ['plugins', 'Plugins', 'plugins.read'],
  ['connectors', 'Connectors', 'connectors.read'],
  ['providers', 'Model providers', 'llm_providers.read'],
  ['keys', 'API keys', 'api_keys.read'],
  ['workers', 'Workers', 'workers.read'],
  ['tokens', 'OAuth tokens', 'oauth_tokens.own'],
  ['orgs', 'Organizations', null],
]

let token = null
let me = null
let current = null
let pendingInvite = null

const api = createApi({
  headers: () => (token ? { authorization: `Bearer ${token}` } : {}),
  onUnauthorized: () => {
    if (token) signedOut('Your session ended; sign in again.')
  },
})

/** What the current member may do, by permission name. */
export function can(permission) {
  return Boolean(me?.member?.permissions?.includes(permission))
}

/** Starts the control-plane console in `root`. */
export async function start(root) {
  const hash = new URLSearchParams(location.hash.slice(1))
  if (hash.get('invite')) {
    // The invitation token is a credential: keep it in memory only and out of the address bar.
    pendingInvite = hash.get('invite')
    history.replaceState(null, '', `${location.pathname}${location.search}#members`)
  }
  if (hash.get('sso_handoff')) {
    // Back from the organization's identity provider: the one-time hand-off becomes a session,
    // and the page the person started from (such as a device approval) comes back.
    const handoff = hash.get('sso_handoff')
    history.replaceState(null, '', `${location.pathname}${location.search}#${hash.get('then') ?? ''}`)
    try {
      const signed = await api.post('/v1/sso/session', { handoff })
      sessionStorage.setItem(SESSION_KEY, signed.session.token)
    } catch (error) {
      return authForms(root, error)
    }
  } else if (hash.get('sso_error')) {
    const code = hash.get('sso_error')
    history.replaceState(null, '', `${location.pathname}${location.search}`)
    return authForms(root, { code, message: SSO_ERRORS[code] ?? 'Single sign-on did not complete; try again.' })
  }
  token = sessionStorage.getItem(SESSION_KEY)
  if (!token) return authForms(root)
  await enter(root)
}

/** What a refused single sign-on means, by the callback's error code. */
const SSO_ERRORS = {
  sso_state_invalid: 'The sign-in expired or was already used; start again.',
  sso_id_token_invalid: 'The identity provider’s answer could not be verified.',
  sso_domain_not_allowed: 'Your email domain is not admitted by this organization’s single sign-on.',
  sso_account_exists:
    'An account with your email exists: sign in with your password, then link it to the provider from the console.',
  sso_identity_conflict: 'That provider account is already linked to another account.',
  admission_refused: 'The organization’s admission policy does not let you join this way.',
  sso_provider_denied: 'The identity provider did not sign you in.',
  sso_provider_error: 'The identity provider could not be reached.',
}

async function enter(root) {
  try {
    if (pendingInvite) {
      const invite = pendingInvite
      pendingInvite = null
      const accepted = await api.post('/v1/invitations/accept', { token: invite })
      announce(`Joined ${accepted.item.organization.name}`)
    }
    me = await api.get('/v1/me')
  } catch (error) {
    if (error.status === 401) return
    return mount(root, errorBox(error))
  }
  shell(root)
}

function signedOut(reason) {
  // The shell's page router must not render signed-in pages any more.
  window.onhashchange = null
  current?.dispose?.()
  current = null
  token = null
  me = null
  sessionStorage.removeItem(SESSION_KEY)
  document.querySelector('.top')?.remove()
  document.querySelector('nav.sections')?.remove()
  authForms(document.getElementById('main'), reason ? { message: reason } : undefined)
}

function authForm(root, kind) {
  const signUp = kind === 'sign-up'
  const status = h('div', { 'aria-live': 'polite' })
  const name = h('input', { name: 'name', type: 'text', autocomplete: 'name', required: true })
  const email = h('input', { name: 'email', type: 'email', autocomplete: 'email', required: true })
  const password = h('input', {
    name: 'password',
    type: 'password',
    autocomplete: signUp ? 'new-password' : 'current-password',
    required: true,
  })
  const passwordField = field('Password', password, signUp ? 'At least 8 characters.' : null)
  const submit = h('button', { type: 'submit', class: 'primary' }, signUp ? 'Sign up' : 'Sign in')
  // After the email, sign-in offers the organization's provider when the email's domain has one.
  const sso = h('div', { 'aria-live': 'polite' })
  const lookUp = async () => {
    const value = email.value.trim()
    const showPassword = (shown) => {
      passwordField.hidden = !shown
      submit.hidden = !shown
      password.required = shown
    }
    const passwordOnly = () => {
      showPassword(true)
      mount(sso)
    }
    if (!value.includes('@')) return passwordOnly()
    try {
      const found = await api.get(`/v1/sso/resolve?email=${encodeURIComponent(value)}`)
      if (found.method !== 'sso') return passwordOnly()
      const returnTo = `${location.pathname}${location.hash}`
      const href = `${found.startUrl}?returnTo=${encodeURIComponent(returnTo)}`
      mount(sso, h('p', null, h('a', { class: 'button primary', href }, `Sign in with ${found.provider}`)))
      showPassword(found.passwordAllowed)
    } catch {
      passwordOnly()
    }
  }
  if (!signUp) email.addEventListener('change', lookUp)
  const form = h(
    'form',
    {
      class: 'card',
      novalidate: true,
      onsubmit: async (event) => {
        event.preventDefault()
        mount(status, h('p', { class: 'muted' }, signUp ? 'Creating the account…' : 'Signing in…'))
        try {
          const body = signUp
            ? { name: name.value, email: email.value, password: password.value }
            : { email: email.value, password: password.value }
          // Signing up with an invitation accepts it in the same step.
          if (signUp && pendingInvite) body.invitationToken = pendingInvite
          const signed = await api.post(`/v1/auth/${kind}`, body)
          if (signUp) pendingInvite = null
          token = signed.session.token
          sessionStorage.setItem(SESSION_KEY, token)
          password.value = ''
          await enter(root)
        } catch (error) {
          const rest = showFieldErrors(form, error)
          mount(
            status,
            errorBox(
              rest.length || !error.details?.issues
                ? error
                : { ...error, details: undefined, message: 'Check the highlighted fields.' },
            ),
          )
        }
      },
    },
    h('h2', null, signUp ? 'Create an account' : 'Sign in'),
    signUp ? field('Name', name) : null,
    field('Email', email),
    sso,
    passwordField,
    submit,
    status,
  )
  return form
}

function authForms(root, problem) {
  document.title = 'Sign in · control plane console'
  mount(
    root,
    h('h1', null, 'Control plane console'),
    problem ? errorBox(problem) : null,
    pendingInvite
      ? h('p', { class: 'card' }, 'You were invited to an organization: sign in or create an account to accept.')
      : null,
    h('div', { class: 'grid' }, authForm(root, 'sign-in'), authForm(root, 'sign-up')),
  )
}

async function signOut() {
  try {
    await api.post('/v1/auth/sign-out')
  } catch {
    // The local sign-out is what matters; a failed call leaves a session that expires.
  }
  signedOut()
  announce('Signed out')
}

function shell(root) {
  document.querySelector('.top')?.remove()
  document.querySelector('nav.sections')?.remove()
  const org = me.organization
  const pages = PAGES.filter(([, , permission]) => !permission || (org && can(permission)))
  const links = pages.map(([id, label]) => h('a', { href: `#${id}`, dataset: { page: id } }, label))
  const top = h(
    'header',
    { class: 'top' },
    h(
      'span',
      { class: 'brand' },
      'service-server',
      h('span', { class: 'muted' }, ` · ${org ? org.name : 'no organization'}`),
    ),
    h('span', { class: 'muted small' }, `${me.user.email}${me.member ? ` · ${me.member.role}` : ''}`),
    h('button', { type: 'button', onclick: signOut }, 'Sign out'),
  )
  const nav = h('nav', { class: 'sections', 'aria-label': 'Sections' }, links)
  root.before(top, nav)
  const render = (moveFocus) => {
    // `#device=CODE` and `#consent=ID` are where other programs send a person to approve them.
    const [page, argument] = location.hash.slice(1).split(/[/=]/)
    const approval = page === 'device' || page === 'consent'
    const id = approval || pages.some(([p]) => p === page) ? page : org ? pages[0][0] : 'orgs'
    for (const link of links) {
      if (link.dataset.page === id) link.setAttribute('aria-current', 'page')
      else link.removeAttribute('aria-current')
    }
    current?.dispose?.()
    const title = { device: 'Sign in a program', consent: 'Allow access' }[id] ?? pages.find(([p]) => p === id)[1]
    document.title = `${title} · control plane console`
    const context = { api, me, can, reload: () => enter(root) }
    if (approval) {
      current = id === 'device' ? devicePage(context, argument) : consentPage(context, argument)
      mount(root, current.node)
      if (moveFocus) root.focus()
      return
    }
    const make = {
      members: membersPage,
      invitations: invitationsPage,
      teams: teamsPage,
      config: configPage,
      skills: skillsPage,
      plugins: pluginsPage,
      connectors: connectorsPage,
      providers: providersPage,
      keys: keysPage,
      workers: workersPage,
      tokens: tokensPage,
    }[id]
    current = make ? make(context) : orgsPage(context)
    mount(root, current.node)
    if (moveFocus) root.focus()
  }
  window.onhashchange = () => render(true)
  render(false)
}

/**
 * Links the signed-in account to the current organization's identity provider (the only way an
 * account made with a password gets an SSO identity; accounts are never matched by email).
 */
function ssoLink() {
  const status = h('div', { 'aria-live': 'polite' })
  const start = async () => {
    try {
      const { url } = await api.post('/v1/org/sso/link', { returnTo: '/console/#orgs' })
      location.href = url
    } catch (error) {
      mount(status, errorBox(error))
    }
  }
  return h(
    'div',
    null,
    h('p', { class: 'muted' }, 'Link your account to the organization’s identity provider to sign in with it.'),
    h('button', { type: 'button', onclick: start }, 'Link with single sign-on'),
    status,
  )
}

function orgsPage({ reload }) {
  const list = h('ul', { class: 'plain' }, h('li', { class: 'muted' }, 'Loading…'))
  const status = h('div', { 'aria-live': 'polite' })
  const name = h('input', { name: 'name', type: 'text', required: true, autocomplete: 'organization' })
  const form = h(
    'form',
    {
      class: 'card',
      onsubmit: async (event) => {
        event.preventDefault()
        try {
          await api.post('/v1/orgs', { name: name.value })
          announce(`Created ${name.value}`)
          location.hash = 'members'
          await reload()
        } catch (error) {
          showFieldErrors(form, error)
          mount(status, errorBox(error))
        }
      },
    },
    field('Name', name),
    h('button', { type: 'submit', class: 'primary' }, 'Create organization'),
    status,
  )
  void (async () => {
    try {
      const { items } = await api.get('/v1/me/orgs')
      if (!items.length) return mount(list, h('li', { class: 'muted' }, 'You do not belong to an organization yet.'))
      mount(
        list,
        items.map((org) =>
          h(
            'li',
            { class: 'row' },
            h('strong', null, org.name),
            h('span', { class: 'pill' }, org.role),
            org.isActive
              ? h('span', { class: 'muted' }, 'active')
              : h(
                  'button',
                  {
                    type: 'button',
                    onclick: async () => {
                      try {
                        await api.post('/v1/me/active-org', { organizationId: org.id })
                        announce(`Switched to ${org.name}`)
                        await reload()
                      } catch (error) {
                        mount(status, errorBox(error))
                      }
                    },
                  },
                  `Switch to ${org.name}`,
                ),
          ),
        ),
      )
    } catch (error) {
      mount(list, h('li', null, errorBox(error)))
    }
  })()
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Organizations'),
      section('Yours', list),
      section('Create an organization', form),
      me.organization ? section('Single sign-on', ssoLink()) : null,
    ),
  }
}
