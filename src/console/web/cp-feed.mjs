// The control plane's change feed (GET /v1/events) for one page: live updates while the stream is
// open, a slow re-read only while it is not. The feed takes the same bearer as every other call,
// which EventSource cannot send, so it is read with sse.mjs's fetch-based reader.
import { h } from './dom.mjs'
import { follow } from './sse.mjs'

/** How often a page re-reads while the feed is down (reconnecting, refused, or not permitted). */
export const FALLBACK_MS = 10_000

/**
 * Follows the feed until `close()`. `onChange(event)` gets each change (`{seq, kind, subject, data}`);
 * `resync()` re-reads what the page shows: when the stream opens (it starts at the newest change,
 * so anything that happened before is read, not replayed) and every FALLBACK_MS while it is down.
 * `status` is a node that says which of the two is happening. Reconnects resume with Last-Event-ID,
 * so an open after a drop misses nothing either.
 */
export function watchChanges({ api, can }, { onChange, resync }) {
  const status = h('p', { class: 'muted small feed-state', role: 'status' }, 'Connecting to live updates…')
  let timer = null
  let closed = false
  const fallback = (text) => {
    status.textContent = `${text} Re-reading every ${FALLBACK_MS / 1000} s.`
    if (timer === null && !closed) timer = setInterval(() => void resync(), FALLBACK_MS)
  }
  const live = () => {
    status.textContent = 'Live: changes appear as they happen.'
    clearInterval(timer)
    timer = null
  }
  let stream = null
  // The feed needs config_objects.read; a role without it gets the slow re-read from the start.
  if (!can('config_objects.read')) fallback('Live updates are not available to your role.')
  else
    stream = follow('/v1/events', api.headers, {
      onEvent: ({ data }) => {
        if (data && typeof data === 'object' && typeof data.kind === 'string') onChange(data)
      },
      onState: (state, detail) => {
        if (closed) return
        if (state === 'open') {
          live()
          void resync()
        } else if (state === 'retrying') fallback('Live updates interrupted; reconnecting.')
        else fallback(`Live updates stopped${detail ? `: ${detail}` : ''}.`)
      },
    })
  return {
    status,
    close() {
      closed = true
      clearInterval(timer)
      stream?.close()
    },
  }
}

/**
 * Runs tasks with the same key one after another (so two re-reads of one thing, started by two
 * quick changes, cannot answer out of order and leave the older state on screen).
 */
export function inOrder() {
  const tails = new Map()
  return (key, task) => {
    const next = (tails.get(key) ?? Promise.resolve()).then(task, task)
    tails.set(key, next)
    void next.finally(() => {
      if (tails.get(key) === next) tails.delete(key)
    })
    return next
  }
}
