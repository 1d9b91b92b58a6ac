// Connectors: one guided flow (account → instance → target), then discovery, mappings and
// "Sync now" with progress and per-item failures re-read until the sync ends (the API answers
// 202 and exposes the sync event to re-read; there is no per-sync stream).
import { all } from './cp-org.mjs'
import { announce, errorBox, field, h, mount, section, showFieldErrors, when } from './dom.mjs'

const POLL_MS = 1000
const DONE = new Set(['completed', 'partial', 'failed'])
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Re-reads `path` until its item's status is final (or the page went away); calls `onItem` each time. */
async function follow(api, path, onItem, alive) {
  for (;;) {
    const { item } = await api.get(path)
    onItem(item)
    if (DONE.has(item.status) || !alive()) return item
    await wait(POLL_MS)
  }
}

function syncProgress(event) {
  const c = event.counts
  const finished = DONE.has(event.status)
  return h(
    'div',
    { class: 'progress-box' },
    h(
      'p',
      null,
      h(
        'span',
        {
          class: `pill ${event.status === 'completed' ? 'ok' : event.status === 'queued' || event.status === 'running' ? '' : 'bad'}`,
        },
        event.status,
      ),
      ` ${c.processed} of ${c.total || '?'} items`,
    ),
    h('progress', { max: String(Math.max(c.total, 1)), value: String(c.processed), 'aria-label': 'Sync progress' }),
    h(
      'p',
      { class: 'muted small' },
      `created ${c.created} · updated ${c.updated} · unchanged ${c.unchanged} · deleted ${c.deleted} · failed ${c.failed}`,
    ),
    event.error
      ? h(
          'div',
          { class: 'error', role: 'alert' },
          h('code', { class: 'code' }, event.error.reason ?? 'failed'),
          ` ${event.error.message ?? ''}`,
        )
      : null,
    event.failures.length
      ? h(
          'ul',
          { class: 'plain', 'aria-label': 'Items that failed' },
          event.failures.map((f) => h('li', null, h('code', null, f.path), ` ${f.reason}: ${f.message}`)),
        )
      : null,
    finished ? h('p', { role: 'status' }, `Sync ${event.status} at ${when(event.completedAt)}.`) : null,
  )
}

function targetCard(api, target, { write, alive, onChanged }) {
  const mappings = h('ul', { class: 'plain', 'aria-label': `Mappings of ${target.remoteId}` })
  const discovered = h('div', { 'aria-live': 'polite' })
  const progress = h('div', { 'aria-live': 'polite' })
  const status = h('div', { 'aria-live': 'polite' })
  const loadMappings = async () => {
    const items = await all(api, `/v1/connector-targets/${target.id}/mappings`)
    mount(
      mappings,
      items.length
        ? items.map((m) => h('li', null, h('code', null, m.selector), ` → ${m.objectType}`))
        : h('li', { class: 'muted' }, 'No mappings yet: discover, then map what should become config objects.'),
    )
    return items
  }
  const discover = async () => {
    mount(discovered, h('p', { class: 'muted' }, 'Looking through the repository…'))
    try {
      const { item } = await api.post(`/v1/connector-targets/${target.id}/discovery`)
      const done = await follow(
        api,
        `/v1/connector-discoveries/${item.id}`,
        (d) => mount(discovered, h('p', { class: 'muted' }, `Discovery ${d.status}…`)),
        alive,
      )
      if (done.status === 'failed')
        return mount(
          discovered,
          errorBox({ code: done.error?.reason, message: done.error?.message ?? 'Discovery failed' }),
        )
      const selectors = new Map()
      for (const found of done.items)
        if (found.objectType) selectors.set(`${found.suggestedSelector}|${found.objectType}`, found)
      mount(
        discovered,
        h(
          'p',
          null,
          `Found ${done.items.length} item${done.items.length === 1 ? '' : 's'}${done.sourceRevision ? ` at ${done.sourceRevision.slice(0, 12)}` : ''}.`,
        ),
        h(
          'ul',
          { class: 'plain' },
          [...selectors.values()].map((found) =>
            h(
              'li',
              { class: 'row' },
              h('code', null, found.suggestedSelector),
              ` ${found.objectType}`,
              write
                ? h(
                    'button',
                    {
                      type: 'button',
                      onclick: async (event) => {
                        event.currentTarget.disabled = true
                        try {
                          await api.post(`/v1/connector-targets/${target.id}/mappings`, {
                            mappingKind: 'path',
                            selector: found.suggestedSelector,
                            objectType: found.objectType,
                          })
                          announce(`Mapped ${found.suggestedSelector}`)
                          await loadMappings()
                        } catch (error) {
                          mount(status, errorBox(error))
                        }
                      },
                    },
                    `Map ${found.suggestedSelector}`,
                  )
                : null,
            ),
          ),
        ),
        done.warnings.length
          ? h(
              'ul',
              { class: 'plain muted' },
              done.warnings.map((w) => h('li', null, w)),
            )
          : null,
      )
    } catch (error) {
      mount(discovered, errorBox(error))
    }
  }
  const sync = async (event) => {
    const button = event.currentTarget
    button.disabled = true
    try {
      const { item } = await api.post(`/v1/connector-targets/${target.id}/sync`)
      const done = await follow(
        api,
        `/v1/connector-sync-events/${item.id}`,
        (e) => mount(progress, syncProgress(e)),
        alive,
      )
      announce(`Sync ${done.status}`)
      onChanged()
    } catch (error) {
      mount(progress, errorBox(error))
    } finally {
      button.disabled = false
    }
  }
  void loadMappings().catch((error) => mount(mappings, h('li', null, errorBox(error))))
  return h(
    'div',
    { class: 'card' },
    h(
      'h4',
      null,
      target.remoteId,
      target.config?.branch ? h('span', { class: 'muted' }, ` @ ${target.config.branch}`) : null,
    ),
    mappings,
    write
      ? h(
          'div',
          { class: 'row' },
          h('button', { type: 'button', onclick: discover }, 'Discover'),
          h('button', { type: 'button', class: 'primary', onclick: sync }, 'Sync now'),
        )
      : null,
    status,
    discovered,
    progress,
  )
}

/** The connectors page. */
export function connectorsPage({ api, can }) {
  let disposed = false
  const alive = () => !disposed
  const list = h('div', { 'aria-live': 'polite' }, h('p', { class: 'muted' }, 'Loading…'))
  const load = async () => {
    try {
      const instances = await all(api, '/v1/connector-instances')
      if (!instances.length) return mount(list, h('p', { class: 'muted' }, 'No connected sources yet.'))
      const cards = []
      for (const instance of instances) {
        const targets = await all(api, `/v1/connector-instances/${instance.id}/targets`)
        cards.push(
          h(
            'div',
            { class: 'card', dataset: { instance: instance.id } },
            h('h3', null, instance.name),
            h(
              'p',
              { class: 'muted small' },
              `${instance.connectorType} · ${instance.status}${instance.lastSyncStatus ? ` · last sync ${instance.lastSyncStatus} ${when(instance.lastSyncedAt)}` : ''}`,
            ),
            targets.map((t) => targetCard(api, t, { write: can('connectors.write'), alive, onChanged: () => {} })),
          ),
        )
      }
      mount(list, cards)
    } catch (error) {
      mount(list, errorBox(error))
    }
  }

  let wizard = null
  if (can('connectors.create')) {
    const type = h(
      'select',
      { name: 'connectorType' },
      h('option', { value: 'git' }, 'git'),
      h('option', { value: 'github' }, 'GitHub'),
    )
    const account = h('input', { name: 'remoteId', type: 'text', autocomplete: 'off' })
    const accountName = h('input', { name: 'displayName', type: 'text', autocomplete: 'off' })
    const token = h('input', { name: 'credentials', type: 'password', autocomplete: 'off' })
    const instanceName = h('input', { name: 'name', type: 'text', autocomplete: 'off' })
    const repo = h('input', { name: 'targetRemoteId', type: 'text', autocomplete: 'off' })
    const branch = h('input', { name: 'config', type: 'text', autocomplete: 'off', value: 'main' })
    const steps = h('ol', { class: 'steps', 'aria-live': 'polite' })
    const status = h('div', { 'aria-live': 'polite' })
    const step = (text, state) => steps.append(h('li', { class: state }, text))
    wizard = h(
      'form',
      {
        class: 'card',
        novalidate: true,
        onsubmit: async (event) => {
          event.preventDefault()
          mount(steps)
          mount(status)
          showFieldErrors(wizard, null)
          const connectorType = type.value
          try {
            const body = { connectorType, remoteId: account.value, displayName: accountName.value || account.value }
            // The token goes to the server once and is never shown again (responses say hasCredentials).
            if (token.value) body.credentials = { token: token.value }
            const created = (await api.post('/v1/connector-accounts', body)).item
            token.value = ''
            step(`Account ${created.displayName} saved`, 'done')
            const instance = (
              await api.post('/v1/connector-instances', {
                connectorAccountId: created.id,
                connectorType,
                name: instanceName.value,
              })
            ).item
            step(`Instance ${instance.name} created`, 'done')
            const target = (
              await api.post(`/v1/connector-instances/${instance.id}/targets`, {
                connectorType,
                remoteId: repo.value,
                targetKind: 'repository_branch',
                config: branch.value ? { branch: branch.value } : {},
              })
            ).item
            step(`Target ${target.remoteId} added: discover and map it below, then sync`, 'done')
            announce('Source connected')
            await load()
          } catch (error) {
            // Field paths are the API's; the target's remoteId is named apart from the account's.
            const rest = showFieldErrors(wizard, error)
            mount(status, errorBox(rest.length ? error : { ...error, details: undefined }))
          }
        },
      },
      h('h3', null, 'Connect a source'),
      h(
        'div',
        { class: 'grid' },
        field('Type', type),
        field('Account', account, 'git: the remote host or URL prefix; GitHub: the owner.'),
        field('Account name', accountName),
        field('Access token', token, 'Optional; stored encrypted and never shown again.'),
      ),
      h(
        'div',
        { class: 'grid' },
        field('Instance name', instanceName),
        field('Repository', repo, 'git: clone URL; GitHub: owner/repo.'),
        field('Branch', branch),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Connect'),
      steps,
      status,
    )
  }
  void load()
  return {
    node: h('div', null, h('h1', null, 'Connectors'), wizard, section('Connected sources', list)),
    dispose() {
      disposed = true
    },
  }
}
