// Workers: create, follow their state live from the change feed (a slow re-read only while the
// feed is down), issue or rotate their tokens (shown once), delete. The list pages.
import { withQuery } from './api.mjs'
import { inOrder, watchChanges } from './cp-feed.mjs'
import { announce, errorBox, field, h, mount, section, shownOnce, showFieldErrors, when } from './dom.mjs'

/** The generation of the first token set issued through the API (creation installs generation 1). */
const FIRST_ISSUED_GENERATION = 2

/** How many times (a second apart) an open Runtime panel re-reads after new tokens. */
const RESTART_READS = 30

/** Workers per page of the list. */
const PAGE = 20

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
export function workersPage(context) {
  const { api, can } = context
  const list = h('ul', { class: 'cards', 'aria-label': 'Workers' }, h('li', { class: 'muted' }, 'Loading…'))
  const status = h('div', { 'aria-live': 'polite' })
  const more = h('button', { type: 'button', hidden: true }, 'Show more Workers')
  /** Cards by Worker id. A card stays in place while its Worker changes, so focus and shown tokens stay too. */
  const cards = new Map()
  /** How many Workers the person has asked to see (grows with "Show more"). */
  let wanted = PAGE
  let disposed = false

  const card = (worker) => {
    const out = h('div', { 'aria-live': 'polite' })
    const state = h('div', null, stateLine(worker))
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
                // Shown in this card only, never stored: leaving the page drops them.
                mount(
                  out,
                  h(
                    'p',
                    null,
                    // A Worker is created with generation 1, given only to its runtime and shown to
                    // nobody: the first set a person is issued replaces no set anyone holds.
                    issued.generation <= FIRST_ISSUED_GENERATION
                      ? `Token set generation ${issued.generation}, the first issued for this Worker; its runtime restarted with it.`
                      : `Token set generation ${issued.generation}. The previous set no longer works.`,
                  ),
                  shownOnce(`${worker.name} client token`, issued.tokens.client),
                  shownOnce(`${worker.name} host token`, issued.tokens.host),
                  shownOnce(`${worker.name} activity token`, issued.tokens.activity),
                )
                announce(`New tokens for ${worker.name}`)
                // The runtime restarts with the new set, on a new address: show it once known.
                void followRestart()
              } catch (error) {
                mount(out, errorBox(error))
              } finally {
                button.disabled = false
              }
            },
          },
          'Issue new tokens',
        ),
        h(
          'button',
          {
            type: 'button',
            'aria-label': `Revoke tokens of ${worker.name}`,
            onclick: async (event) => {
              if (!confirm(`Revoke the tokens of ${worker.name}? Its runtime stops until new tokens are issued.`))
                return
              const button = event.currentTarget
              button.disabled = true
              mount(out, h('p', { class: 'muted' }, 'Revoking; the runtime stops…'))
              try {
                await api.del(`/v1/workers/${worker.id}/tokens`)
                mount(
                  out,
                  h('p', { role: 'status' }, 'Tokens revoked; the runtime stopped. Issue new tokens to start it.'),
                )
                if (details.open) void loadRuntime()
              } catch (error) {
                mount(out, errorBox(error))
              } finally {
                button.disabled = false
              }
            },
          },
          'Revoke tokens',
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
                announce(`${worker.name} deleted`)
                remove(worker.id)
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
    let shownUrl = null
    const loadRuntime = async () => {
      try {
        const item = (await api.get(`/v1/workers/${worker.id}/runtime`)).item
        shownUrl = item.url
        mount(runtime, runtimeFacts(item))
      } catch (error) {
        mount(runtime, errorBox(error))
      }
    }
    // A restarted runtime records its new address without a change on the feed (its state may not
    // change), so after new tokens the open panel re-reads until the address is a new one.
    const followRestart = async () => {
      const before = shownUrl
      for (let i = 0; i < RESTART_READS && details.open && !disposed; i++) {
        await loadRuntime()
        if (shownUrl && shownUrl !== before) return
        await new Promise((resolve) => setTimeout(resolve, 1000))
      }
    }
    details.addEventListener('toggle', () => {
      if (details.open) void loadRuntime()
    })
    const node = h(
      'li',
      { class: 'card', dataset: { worker: worker.id } },
      h('h3', null, worker.name),
      worker.description ? h('p', { class: 'muted' }, worker.description) : null,
      state,
      h('p', { class: 'muted small' }, `${worker.provisioner} · created ${when(worker.createdAt)}`),
      details,
      actions.length ? h('div', { class: 'row' }, actions) : null,
      out,
    )
    let shown = worker.state
    return {
      node,
      update(next) {
        mount(state, stateLine(next))
        if (next.state !== shown) announce(`${next.name} is ${next.state}`)
        shown = next.state
        if (details.open) void loadRuntime()
      },
    }
  }

  const remove = (id) => {
    cards.get(id)?.node.remove()
    cards.delete(id)
    if (!cards.size) mount(list, h('li', { class: 'muted' }, 'No Workers yet.'))
  }

  /** Puts `items` (newest first) in the list, keeping the cards already there in place. */
  const reconcile = (items) => {
    const ids = new Set(items.map((w) => w.id))
    for (const [id, entry] of cards) {
      if (ids.has(id)) continue
      entry.node.remove()
      cards.delete(id)
    }
    for (const child of [...list.children]) if (!child.dataset.worker) child.remove()
    let at = list.firstElementChild
    for (const worker of items) {
      let entry = cards.get(worker.id)
      if (entry) entry.update(worker)
      else cards.set(worker.id, (entry = card(worker)))
      // Only a new or moved card is inserted: moving a card would take the focus out of it.
      if (entry.node === at) at = at.nextElementSibling
      else list.insertBefore(entry.node, at)
    }
    if (!items.length) mount(list, h('li', { class: 'muted' }, 'No Workers yet.'))
  }

  /** Re-reads as many Workers as are shown (pages of PAGE). */
  const resync = async () => {
    try {
      const items = []
      let cursor = null
      do {
        const page = await api.get(withQuery('/v1/workers', { limit: PAGE, cursor }))
        items.push(...page.items)
        cursor = page.nextCursor
      } while (cursor && items.length < wanted)
      if (disposed) return
      more.hidden = !cursor
      reconcile(items)
      mount(status)
    } catch (error) {
      if (!disposed) mount(status, errorBox(error))
    }
  }
  more.addEventListener('click', () => {
    wanted += PAGE
    void resync()
  })

  /** Re-reads one Worker after the feed said it changed; reads of one Worker run in order. */
  const queue = inOrder()
  const reread = (id) =>
    queue(id, async () => {
      if (disposed) return
      try {
        const worker = (await api.get(`/v1/workers/${id}`)).item
        if (disposed) return
        const entry = cards.get(id)
        // One this page has not shown yet (created elsewhere): the list decides where it goes.
        if (entry) entry.update(worker)
        else await resync()
      } catch (error) {
        if (error.status === 404) remove(id)
        else mount(status, errorBox(error))
      }
    })

  const feed = watchChanges(context, {
    resync,
    onChange: (change) => {
      if (!change.kind.startsWith('worker.') || change.subject?.type !== 'worker') return
      if (change.kind === 'worker.deleted') remove(change.subject.id)
      else reread(change.subject.id)
    },
  })

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
            // Shown at once; its state then follows from the feed.
            await resync()
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
  void resync()
  return {
    node: h(
      'div',
      null,
      h('h1', null, 'Workers'),
      form ? section('Create a Worker', form) : null,
      status,
      section('Workers', feed.status, list, more),
    ),
    dispose() {
      disposed = true
      feed.close()
    },
  }
}
