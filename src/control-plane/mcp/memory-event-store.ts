/**
 * The events of one MCP session kept for `Last-Event-ID` resumption, bounded by count.
 *
 * Why in memory and per session: a session lives on one instance (its server state is there), so
 * a client resumes against the instance that holds it; the newest `limit` messages are enough to
 * bridge a reconnect, and a client that was away longer re-reads the resource list, which a
 * `list_changed` tells it to do anyway.
 * @module
 */
import type { EventStore, EventId, StreamId } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js'

interface Stored {
  id: number
  streamId: StreamId
  message: JSONRPCMessage
}

/** A bounded event store for one session. */
export class MemoryEventStore implements EventStore {
  readonly #events: Stored[] = []
  #next = 1

  constructor(private readonly limit: number) {}

  async storeEvent(streamId: StreamId, message: JSONRPCMessage): Promise<EventId> {
    const id = this.#next++
    this.#events.push({ id, streamId, message })
    if (this.#events.length > this.limit) this.#events.splice(0, this.#events.length - this.limit)
    return String(id)
  }

  async getStreamIdForEventId(eventId: EventId): Promise<StreamId | undefined> {
    return this.#find(eventId)?.streamId
  }

  async replayEventsAfter(
    lastEventId: EventId,
    { send }: { send: (eventId: EventId, message: JSONRPCMessage) => Promise<void> },
  ): Promise<StreamId> {
    const last = this.#find(lastEventId)
    if (!last) return ''
    for (const event of this.#events) {
      // Priming events (empty messages) only carry an id; replaying one would send `{}`.
      if (event.id > last.id && event.streamId === last.streamId && 'jsonrpc' in event.message)
        await send(String(event.id), event.message)
    }
    return last.streamId
  }

  /** Number of events held (for tests). */
  get size(): number {
    return this.#events.length
  }

  #find(eventId: EventId): Stored | undefined {
    if (!/^\d{1,15}$/.test(eventId)) return undefined
    const id = Number(eventId)
    return this.#events.find((e) => e.id === id)
  }
}
