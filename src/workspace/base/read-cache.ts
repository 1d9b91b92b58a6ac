/**
 * Parsed views of a workspace's files (config, skills, commands, plugins, MCP), computed once and
 * kept until something changes. Read routes then cost no disk access; the change watcher and
 * every server write invalidate. A load that races an invalidation is not kept.
 * @module
 */
import { PreEncodedJson } from '../../core/errors.ts'

interface Slot {
  generation: number
  value: Promise<unknown>
  /** Set once `value` fulfils, so hits can be answered without a promise. */
  settled?: { value: unknown }
}

/** A per-workspace memo of parsed views. */
export class ReadCache {
  #generation = 0
  readonly #slots = new Map<string, Slot>()

  /** The cached value for `key`, loading it when missing. Failed loads are not cached. */
  get<T>(key: string, load: () => Promise<T>): Promise<T> {
    const slot = this.#slots.get(key)
    if (slot && slot.generation === this.#generation) return slot.value as Promise<T>
    const generation = this.#generation
    const value = load()
    const fresh: Slot = { generation, value }
    this.#slots.set(key, fresh)
    value.then(
      (settled) => {
        fresh.settled = { value: settled }
      },
      () => {
        if (this.#slots.get(key)?.value === value) this.#slots.delete(key)
      },
    )
    return value
  }

  /** Drops every cached view. */
  invalidate(): void {
    this.#generation++
    this.#slots.clear()
  }

  /**
   * A serialised, UTF-8 encoded JSON body built from cached views, memoised like any view: hot
   * read routes then skip parsing, `JSON.stringify` and encoding.
   */
  json(key: string, build: () => Promise<unknown>): Promise<Uint8Array> {
    return this.get(`json:${key}`, async () => encoder.encode(JSON.stringify(await build())))
  }

  /**
   * {@link json} as a route result: synchronous on a settled hit, so the hottest reads never
   * allocate a promise (the pipeline answers synchronous results without awaiting).
   */
  jsonBody(key: string, build: () => Promise<unknown>): PreEncodedJson | Promise<PreEncodedJson> {
    const slot = this.#slots.get(`json:${key}`)
    if (slot?.settled && slot.generation === this.#generation)
      return new PreEncodedJson(slot.settled.value as Uint8Array)
    return this.json(key, build).then(jsonText)
  }
}

const encoder = new TextEncoder()

/** A JSON body that is already serialised (and encoded); the pipeline sends it with the route's success status. */
export function jsonText(body: string | Uint8Array): PreEncodedJson {
  return new PreEncodedJson(body)
}
