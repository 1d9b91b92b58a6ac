// Connectors: one guided flow (account → instance → target), then discovery, mappings and
// "Sync now". A sync's progress, result and per-item failures follow the change feed
// (connector_sync.requested, retried and state_changed), including syncs started elsewhere; the
// feed carries state moves, so counts are re-read at each. Discovery has no feed events and is
// short: it is re-read every second until it ends.
import { withQuery } from './api.mjs'
import { inOrder, watchChanges } from './cp-feed.mjs'
import { all } from './cp-org.mjs'
import { announce, errorBox, field, h, mount, section, showFieldErrors, when } from './dom.mjs'

const POLL_MS = 1000
const DONE = new Set(['completed', 'partial', 'failed'])
const wait = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** Re-reads a discovery until its status is final (or the page went away); calls `onItem` each time. */
async function untilDone(api, path, onItem, alive) {
  for (;;) {
    const { item } = await api.get(path)
    onItem(item)
    if (DONE.has(item.status) || !alive()) return item
    await wait(POLL_MS)
  }
}

function syncProgress(event, retry) {
  const c = event.counts
  const finished = DONE.has(event.status)
  // Before the first batch is counted the total is unknown: an indeterminate bar says "working".
  const bar =
    finished || c.total > 0
      ? h('progress', { max: String(Math.max(c.total, 1)), value: String(finished && !c.total ? 1 : c.processed) })
      : h('progress')
  bar.setAttribute('aria-label', 'Sync progress')
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
    bar,
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
    finished
      ? h(
          'p',
          { role: 'status', class: 'row' },
          `Sync ${event.status} at ${when(event.completedAt)}.`,
          retry && event.status !== 'completed' ? retry : null,
        )
      : event.nextAttemptAt
        ? h(
            'p',
            { class: 'muted small' },
            `Attempt ${event.attemptCount} failed; trying again ${when(event.nextAttemptAt)}.`,
          )
        : null,
  )
}

/**
 * A target: its mappings, discovery, and the sync shown (the latest, or the one just started).
 * Returns `{node, show(syncEvent), latest()}`; the page calls `show` when the feed says a sync of
 * this target moved.
 */
function targetCard(api, target, { write, alive, onFinished }) {
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
      const done = await untilDone(
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
  /** The sync on screen; an older one's news does not replace it. */
  let shown = null
  const retry = (syncId) =>
    h(
      'button',
      {
        type: 'button',
        onclick: async (event) => {
          event.currentTarget.disabled = true
          try {
            show((await api.post(`/v1/connector-sync-events/${syncId}/retry`)).item)
          } catch (error) {
            mount(status, errorBox(error))
          }
        },
      },
      'Retry failed items',
    )
  const show = (sync) => {
    if (!alive() || (shown && (sync.id < shown.id || (sync.id === shown.id && sync.updatedAt < shown.updatedAt))))
      return
    const wasFinished = shown?.id === sync.id && DONE.has(shown.status)
    const before = shown
    shown = sync
    mount(progress, syncProgress(sync, write ? retry(sync.id) : null))
    if (DONE.has(sync.status) && !wasFinished && before) {
      announce(`Sync ${sync.status}`)
      onFinished()
    }
  }
  /** Shows the target's newest sync (when the page opens, and to catch up after the feed was down). */
  const latest = async () => {
    try {
      const page = await api.get(withQuery('/v1/connector-sync-events', { connectorTargetId: target.id, limit: 1 }))
      if (page.items[0]) show(page.items[0])
    } catch (error) {
      mount(progress, errorBox(error))
    }
  }
  const sync = async (event) => {
    const button = event.currentTarget
    button.disabled = true
    mount(status)
    try {
      // 202: the sync is queued; the feed reports it running and finished.
      show((await api.post(`/v1/connector-targets/${target.id}/sync`)).item)
    } catch (error) {
      mount(status, errorBox(error))
    } finally {
      button.disabled = false
    }
  }
  void loadMappings().catch((error) => mount(mappings, h('li', null, errorBox(error))))
  void latest()
  const node = h(
    'div',
    { class: 'card', dataset: { target: target.id } },
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
  return { node, show, latest }
}

/** The connectors page. */
export function connectorsPage(context) {
  const { api, can } = context
  let disposed = false
  const alive = () => !disposed
  const list = h('div', null, h('p', { class: 'muted' }, 'Loading…'))
  /** Target cards by target id, for the feed's news of their syncs. */
  let targets = new Map()
  const summary = (instance) =>
    `${instance.connectorType} · ${instance.status}${instance.lastSyncStatus ? ` · last sync ${instance.lastSyncStatus} ${when(instance.lastSyncedAt)}` : ''}`
  const load = async () => {
    try {
      const instances = await all(api, '/v1/connector-instances')
      const cards = []
      const next = new Map()
      for (const instance of instances) {
        const found = await all(api, `/v1/connector-instances/${instance.id}/targets`)
        const line = h('p', { class: 'muted small' }, summary(instance))
        const onFinished = async () => {
          try {
            line.textContent = summary((await api.get(`/v1/connector-instances/${instance.id}`)).item)
          } catch {
            // The summary keeps its last value; the sync's own result is on screen.
          }
        }
        const write = can('connectors.write')
        const targetCards = found.map((t) => targetCard(api, t, { write, alive, onFinished }))
        for (const [i, t] of found.entries()) next.set(t.id, targetCards[i])
        cards.push(
          h(
            'div',
            { class: 'card', dataset: { instance: instance.id } },
            h('h3', null, instance.name),
            line,
            targetCards.map((c) => c.node),
          ),
        )
      }
      if (disposed) return
      targets = next
      mount(list, cards.length ? cards : h('p', { class: 'muted' }, 'No connected sources yet.'))
    } catch (error) {
      mount(list, errorBox(error))
    }
  }

  // A sync moved (here or anywhere else): re-read it, in order per sync, and show it on its target.
  const queue = inOrder()
  const reread = (syncId) =>
    queue(syncId, async () => {
      if (disposed) return
      try {
        const { item } = await api.get(`/v1/connector-sync-events/${syncId}`)
        targets.get(item.connectorTargetId)?.show(item)
      } catch {
        // Gone or no longer visible: nothing of it is on screen to update.
      }
    })
  const feed = watchChanges(context, {
    resync: async () => {
      for (const card of targets.values()) await card.latest()
    },
    onChange: (change) => {
      if (change.kind === 'connector_sync.state_changed' && typeof change.data?.syncEventId === 'string')
        void reread(change.data.syncEventId)
      else if (change.kind === 'connector_sync.requested' || change.kind === 'connector_sync.retried')
        if (change.subject?.type === 'connector_sync_event') void reread(change.subject.id)
    },
  })

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
        'p',
        { class: 'muted small' },
        'An account is where sources live and the credentials to read them (a git host or a GitHub owner); ' +
          'an instance is one connection made through it, and a target one repository branch it syncs. ' +
          'With an access token, every repository must be an HTTPS URL under the account, so the token goes nowhere else.',
      ),
      h(
        'div',
        { class: 'grid' },
        field('Type', type),
        field('Account', account, 'git: the remote host or the URL prefix its repositories share; GitHub: the owner.'),
        field('Account name', accountName),
        field('Access token', token, 'Optional; stored encrypted and never shown again.'),
      ),
      h(
        'div',
        { class: 'grid' },
        field('Instance name', instanceName),
        field(
          'Repository',
          repo,
          'git: a clone URL (HTTPS, ssh://, git:// or user@host:path); GitHub: owner/repo. A local repository (file:// or a path) works only when the server allows it: connectors.allowFileUrls in the config file or SERVICE_CONNECTORS_ALLOW_FILE_URLS=true, off by default.',
        ),
        field('Branch', branch),
      ),
      h('button', { type: 'submit', class: 'primary' }, 'Connect'),
      steps,
      status,
    )
  }
  void load()
  return {
    node: h('div', null, h('h1', null, 'Connectors'), wizard, section('Connected sources', feed.status, list)),
    dispose() {
      disposed = true
      feed.close()
    },
  }
}
