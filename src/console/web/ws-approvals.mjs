// Pending writes, live over /approvals/events, with Allow and Deny.
import { announce, errorBox, h, mount, section, when } from './dom.mjs'
import { follow } from './sse.mjs'

/**
 * Follows approval requests and decisions for as long as the console is signed in, so the
 * navigation badge is live on every page. `subscribe(fn)` gets the pending list on each change.
 */
export function createApprovalStore(api, onState) {
  const pending = new Map()
  const decided = []
  const listeners = new Set()
  const notify = () => {
    const list = [...pending.values()]
    for (const listener of listeners) listener(list, decided)
  }
  const stream = follow('/approvals/events', api.headers, {
    onState,
    onEvent: ({ event, data }) => {
      const approval = data?.approval
      if (!approval?.id) return
      if (event === 'approval.requested') {
        if (!pending.has(approval.id)) announce(`Approval requested: ${approval.summary}`)
        pending.set(approval.id, approval)
      } else if (event === 'approval.decided') {
        pending.delete(approval.id)
        decided.unshift({ approval, decision: data.decision ?? {}, at: data.timestamp })
        decided.splice(20)
      }
      notify()
    },
  })
  return {
    subscribe(listener) {
      listeners.add(listener)
      listener([...pending.values()], decided)
      return () => listeners.delete(listener)
    },
    /** Drops an approval the server no longer holds (decided elsewhere, timed out). */
    forget(id) {
      if (pending.delete(id)) notify()
    },
    close: () => stream.close(),
  }
}

const REASONS = {
  allowed: 'Allowed',
  denied: 'Denied',
  timeout: 'Timed out',
  cancelled: 'Withdrawn by the client',
}

function actorText(actor) {
  if (!actor) return 'unknown'
  const who = actor.type === 'host' ? 'host' : actor.type === 'remote' ? 'client' : actor.type
  return [
    who,
    actor.scope,
    actor.clientId ? `(${actor.clientId})` : null,
    actor.tokenId ? `token ${actor.tokenId}` : null,
  ]
    .filter(Boolean)
    .join(' ')
}

const OMITTED = {
  binary: 'Binary content: compared by size and digest only.',
  too_large: 'Too large to show line by line: compared by size and digest only.',
  total_limit: 'Not shown: this request’s diffs already reached the size limit.',
  directory: 'A folder: its contents are not listed.',
  secrets: 'Not shown: the file holds secrets that could not be masked.',
}

const ACTION_LABEL = { create: 'Create', update: 'Update', delete: 'Delete' }

function digestText(label, digest) {
  if (!digest) return null
  return `${label}: ${digest.bytes} byte${digest.bytes === 1 ? '' : 's'}${digest.sha256 ? `, sha256 ${digest.sha256.slice(0, 12)}…` : ''}`
}

/** A unified diff as a focusable, scrollable block; lines are marked by their +/- prefix, not colour alone. */
function unifiedBlock(diff, path) {
  const lines = diff.replace(/\n$/, '').split('\n')
  return h(
    'pre',
    { class: 'json diff', tabindex: '0', 'aria-label': `Changes to ${path}` },
    lines.map((line) =>
      h(
        'span',
        {
          class:
            line.startsWith('+') && !line.startsWith('+++')
              ? 'add'
              : line.startsWith('-') && !line.startsWith('---')
                ? 'del'
                : line.startsWith('@@') || line.startsWith('---') || line.startsWith('+++')
                  ? 'same muted'
                  : 'same',
        },
        line,
      ),
    ),
  )
}

/** What a held write would change, per path: action, then its diff or why there is none. */
function changesView(changes) {
  return h(
    'details',
    { open: true, class: 'changes' },
    h('summary', null, `What would change (${changes.length} path${changes.length === 1 ? '' : 's'})`),
    h(
      'ul',
      { class: 'plain', 'aria-label': 'Changes' },
      changes.map((change) =>
        h(
          'li',
          { dataset: { changePath: change.path } },
          h(
            'p',
            null,
            h('span', { class: `pill ${change.action === 'delete' ? 'bad' : 'ok'}` }, ACTION_LABEL[change.action]),
            ' ',
            h('code', null, change.path),
            change.masked ? h('span', { class: 'muted' }, ' · secret values shown as ********') : null,
          ),
          change.diff
            ? unifiedBlock(change.diff, change.path)
            : h(
                'p',
                { class: 'muted' },
                [OMITTED[change.diffOmitted], digestText('Before', change.before), digestText('After', change.after)]
                  .filter(Boolean)
                  .join(' · '),
              ),
        ),
      ),
    ),
  )
}

function approvalCard(api, store, approval) {
  const status = h('div', { 'aria-live': 'polite' })
  const reply = async (choice, buttons) => {
    for (const button of buttons) button.disabled = true
    try {
      await api.post(`/approvals/${encodeURIComponent(approval.id)}`, { reply: choice })
      announce(`${choice === 'allow' ? 'Allowed' : 'Denied'}: ${approval.summary}`)
      store.forget(approval.id)
    } catch (error) {
      if (error.status === 404) store.forget(approval.id)
      mount(status, errorBox(error))
      for (const button of buttons) button.disabled = false
    }
  }
  const allow = h('button', { type: 'button', class: 'primary' }, 'Allow')
  const deny = h('button', { type: 'button', class: 'danger' }, 'Deny')
  allow.addEventListener('click', () => reply('allow', [allow, deny]))
  deny.addEventListener('click', () => reply('deny', [allow, deny]))
  return h(
    'li',
    { class: 'card approval', dataset: { approval: approval.id } },
    h('h3', null, approval.summary),
    h(
      'dl',
      { class: 'facts' },
      h('dt', null, 'Action'),
      h('dd', null, h('code', null, approval.action)),
      h('dt', null, 'Workspace'),
      h('dd', null, approval.workspaceId),
      h('dt', null, 'Asked by'),
      h('dd', null, actorText(approval.actor)),
      h('dt', null, 'Asked at'),
      h('dd', null, when(approval.createdAt)),
    ),
    approval.paths?.length
      ? h(
          'details',
          { open: true },
          h('summary', null, `Would change ${approval.paths.length} path${approval.paths.length === 1 ? '' : 's'}`),
          h(
            'ul',
            { class: 'paths' },
            approval.paths.map((path) => h('li', null, h('code', null, path))),
          ),
        )
      : null,
    approval.changes?.length ? changesView(approval.changes) : null,
    h('div', { class: 'row' }, allow, deny),
    status,
  )
}

/** The approvals page. */
export function approvalsPage(api, store) {
  const list = h('ul', { class: 'cards', 'aria-label': 'Pending approvals' })
  const recent = h('ul', { class: 'plain' })
  const unsubscribe = store.subscribe((pending, decided) => {
    const shown = new Set()
    for (const approval of pending) {
      shown.add(approval.id)
      if (!list.querySelector(`[data-approval="${CSS.escape(approval.id)}"]`))
        list.append(approvalCard(api, store, approval))
    }
    for (const card of [...list.children]) if (card.dataset.approval && !shown.has(card.dataset.approval)) card.remove()
    if (!pending.length)
      mount(list, h('li', { class: 'muted' }, 'Nothing is waiting. New requests appear here as they arrive.'))
    else list.querySelector('li.muted')?.remove()
    mount(
      recent,
      decided.length
        ? decided.map(({ approval, decision, at }) =>
            h(
              'li',
              null,
              h(
                'span',
                { class: `pill ${decision.allowed ? 'ok' : 'bad'}` },
                REASONS[decision.reason] ?? String(decision.reason),
              ),
              ' ',
              approval.summary,
              h('span', { class: 'muted' }, ` · ${when(at)}`),
            ),
          )
        : h('li', { class: 'muted' }, 'No decisions since the console opened.'),
    )
  })
  const node = h(
    'div',
    null,
    h('h1', null, 'Approvals'),
    h(
      'p',
      { class: 'muted' },
      'Writes held for your decision. The client waits until you allow or deny (or the server’s timeout denies for you).',
    ),
    section('Pending', list),
    section('Recent decisions', recent),
  )
  return { node, dispose: unsubscribe }
}
