// Workers: create, watch their state live (polled: the API has no Worker event stream), issue or
// rotate their tokens (shown once), delete.
import { all } from './cp-org.mjs'
import { announce, errorBox, field, h, mount, section, shownOnce, showFieldErrors, when } from './dom.mjs'

/** How often the page re-reads Workers while one is changing state. */
const POLL_MS = 2000

const STATE_PILL = { healthy: 'ok', failed: 'bad', unreachable: 'bad', stopped: '', provisioning: '' }

function stateLine(worker) {
  return h(
    'p',
    { class: 'row' },
    h('span', { class: `pill ${STATE_PILL[worker.state] ?? ''}` }, worker.state),
    worker.stateReason ? h('code', null, worker.stateReason) : null,
    worker.stateMessage ? h('span', null, worker.stateMessage) : null,
  )
}

function runtimeFacts(runtime) {
  return h(
    'dl',
    { class: 'facts' },
    h('dt', null, 'Reachable at'),
    h('dd', null, runtime.url ? h('code', null, runtime.url) : '—'),
    h('dt', null, 'Version'),
    h('dd', null, runtime.version ?? '—'),
    h('dt', null, 'Last heartbeat'),
    h('dd', null, when(runtime.lastHeartbeatAt)),
    h('dt', null, 'Open sessions'),
    h('dd', null, runtime.openSessionCount ?? '—'),
    h('dt', null, 'Last error'),
    h(
      'dd',
      null,
      runtime.lastError
        ? [h('code', null, runtime.lastError.reason), ` ${runtime.lastError.message} (${when(runtime.lastError.at)})`]
        : 'none',
    ),
  )
}

/** The Workers page. */
export function workersPage({ api, can }) {
  const list = h('ul', { class: 'cards', 'aria-label': 'Workers' }, h('li', { class: 'muted' }, 'Loading…'))
  const status = h('div', { 'aria-live': 'polite' })
  const secrets = new Map()
  let timer = null
  let disposed = false

  const card = (worker) => {
    const out = h('div', { 'aria-live': 'polite' }, secrets.get(worker.id) ?? null)
    const runtime = h('div')
    const actions = []
    if (can('workers.tokens')) {
      actions.push(
        h(
          'button',
          {
            type: 'button',
            onclick: async (event) => {
              const button = event.currentTarget
              button.disabled = true
              mount(out, h('p', { class: 'muted' }, 'Issuing tokens; the runtime restarts with them…'))
              try {
                const issued = (await api.post(`/v1/workers/${worker.id}/tokens`)).item
                const shown = h(
                  'div',
                  null,
                  h('p', null, `Token set generation ${issued.generation}. The previous set no longer works.`),
                  shownOnce(`${worker.name} client token`, issued.tokens.client),
                  shownOnce(`${worker.name} host token`, issued.tokens.host),
                  shownOnce(`${worker.name} activity token`, issued.tokens.activity),
                )
                // Kept across the page's refreshes, never stored: leaving the page drops them.
                secrets.set(worker.id, shown)
                announce(`New tokens for ${worker.name}`)
                await refresh()
              } catch (error) {
                mount(out, errorBox(error))
              } finally {
                button.disabled = false
              }
            },
          },
          'Issue new tokens',
        ),
      )
    }
    if (can('workers.manage')) {
      actions.push(
        h(
          'button',
          {
            type: 'button',
            class: 'danger',
            'aria-label': `Delete ${worker.name}`,
            onclick: async () => {
              if (!confirm(`Delete ${worker.name}? Its runtime stops and its tokens stop working.`)) return
              mount(out, h('p', { class: 'muted' }, 'Stopping the runtime and deleting…'))
              try {
                await api.del(`/v1/workers/${worker.id}`)
                secrets.delete(worker.id)
                announce(`${worker.name} deleted`)
                await refresh()
              } catch (error) {
                mount(out, errorBox(error))
              }
            },
          },
          'Delete',
        ),
      )
    }
    const details = h('details', null, h('summary', null, 'Runtime'), runtime)
    details.addEventListener('toggle', async () => {
      if (!details.open) return
      try {
        mount(runtime, runtimeFacts((await api.get(`/v1/workers/${worker.id}/runtime`)).item))
      } catch (error) {
        mount(runtime, errorBox(error))
      }
    })
    return h(
      'li',
      { class: 'card', dataset: { worker: worker.id } },
      h('h3', null, worker.name),
      worker.description ? h('p', { class: 'muted' }, worker.description) : null,
      stateLine(worker),
      h('p', { class: 'muted small' }, `${worker.provisioner} · created ${when(worker.createdAt)}`),
      details,
      actions.length ? h('div', { class: 'row' }, actions) : null,
      out,
    )
  }

  const refresh = async () => {
    clearTimeout(timer)
    try {
      const items = await all(api, '/v1/workers')
      if (disposed) return
      mount(list, items.length ? items.map(card) : h('li', { class: 'muted' }, 'No Workers yet.'))
      if (items.some((w) => w.state === 'provisioning')) timer = setTimeout(refresh, POLL_MS)
    } catch (error) {
      mount(status, errorBox(error))
    }
  }

  let form = null
  if (can('workers.manage')) {
    const name = h('input', { name: 'name', type: 'text', required: true, autocomplete: 'off' })
    const description = h('input', { name: 'description', type: 'text', autocomplete: 'off' })
    const provisioner = h(
      'select',
      { name: 'provisioner' },
      h('option', { value: 'process' }, 'process (on this host)'),
    )
    form = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          try {
            const body = { name: name.value, provisioner: provisioner.value }
            if (description.value.trim()) body.description = description.value.trim()
            await api.post('/v1/workers', body)
            showFieldErrors(form, null)
            mount(status)
            name.value = ''
            description.value = ''
            announce('Worker created; provisioning')
            await refresh()
          } catch (error) {
            showFieldErrors(form, error)
            mount(status, errorBox(error))
          }
        },
      },
      h(
        'div',
        { class: 'grid' },
        field('Name', name),
        field('Description', description),
        field('Runs as', provisioner),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Create Worker'),
    )
  }
  void refresh()
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Workers'),
      form ? section('Create a Worker', form) : null,
      status,
      section('Workers', list),
    ),
    dispose() {
      disposed = true
      clearTimeout(timer)
    },
  }
}
