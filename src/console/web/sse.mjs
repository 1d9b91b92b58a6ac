// Server-Sent Events over fetch: EventSource cannot send an Authorization header, and the
// console's credentials must never go into a URL. Reconnects resume with Last-Event-ID.

const RETRY_MS = [1000, 2000, 5000, 10000]

/**
 * Follows `path` until `close()`. `onEvent({id, event, data})` gets each event with `data` parsed
 * as JSON when it is JSON; `onState('open'|'retrying'|'closed', detail)` reports the connection.
 * A 401 or 403 ends following (retrying cannot fix a credential).
 */
export function follow(path, headers, { onEvent, onState }) {
  const controller = new AbortController()
  let lastId = null
  let attempt = 0
  let stopped = false

  const dispatch = (block) => {
    let event = 'message'
    let id = null
    const data = []
    for (const line of block.split('\n')) {
      if (!line || line.startsWith(':')) continue
      const colon = line.indexOf(':')
      const name = colon < 0 ? line : line.slice(0, colon)
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
      if (name === 'event') event = value
      else if (name === 'data') data.push(value)
      else if (name === 'id') id = value
    }
    if (id !== null) lastId = id
    if (!data.length) return
    const text = data.join('\n')
    let parsed = text
    try {
      parsed = JSON.parse(text)
    } catch {
      // Plain text data stays a string.
    }
    onEvent({ id, event, data: parsed })
  }

  const connect = async () => {
    while (!stopped) {
      try {
        const response = await fetch(path, {
          headers: {
            accept: 'text/event-stream',
            ...headers(),
            ...(lastId !== null ? { 'last-event-id': lastId } : {}),
          },
          signal: controller.signal,
          cache: 'no-store',
        })
        if (response.status === 401 || response.status === 403) {
          let message = `The server answered ${response.status}`
          try {
            message = (await response.json()).message ?? message
          } catch {
            // Keep the generic message.
          }
          onState('closed', message)
          return
        }
        if (!response.ok || !response.body) throw new Error(`The server answered ${response.status}`)
        attempt = 0
        onState('open')
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
        let buffer = ''
        for (;;) {
          const { value, done } = await reader.read()
          if (done) break
          buffer += value.replace(/\r\n?/g, '\n')
          let end = buffer.indexOf('\n\n')
          while (end >= 0) {
            dispatch(buffer.slice(0, end))
            buffer = buffer.slice(end + 2)
            end = buffer.indexOf('\n\n')
          }
        }
      } catch (error) {
        if (stopped) return
        onState('retrying', error instanceof Error ? error.message : String(error))
      }
      if (stopped) return
      onState('retrying', 'The stream ended; reconnecting')
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS[Math.min(attempt++, RETRY_MS.length - 1)]))
    }
  }
  void connect()
  return {
    close() {
      stopped = true
      controller.abort()
      onState('closed')
    },
  }
}
