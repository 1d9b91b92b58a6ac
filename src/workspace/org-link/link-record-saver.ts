/**
 * Saves one organization link's record, one save at a time and in order. A feed position is saved
 * soon rather than at once (200 ms later, not fsynced): a busy feed moves it many times a second,
 * and resuming from a slightly older position only replays events the next reconcile reads anyway.
 * @module
 */
import type { Logger } from '../../core/logger.ts'
import type { OrgLinkRecord, OrgLinkStore } from './org-link-state.ts'

/** The ordered, debounced writer of a link's record. */
export class LinkRecordSaver {
  #timer: ReturnType<typeof setTimeout> | undefined
  #saving: Promise<void> = Promise.resolve()

  constructor(
    private readonly record: OrgLinkRecord,
    private readonly store: OrgLinkStore,
    private readonly logger: Logger,
  ) {}

  /** Saves within 200 ms, once for every change made meanwhile. */
  soon(): void {
    if (this.#timer) return
    this.#timer = setTimeout(() => {
      this.#timer = undefined
      void this.save(false)
    }, 200)
  }

  /** Saves a copy of the record as it is now, after every save already asked for. */
  save(durable = true): Promise<void> {
    const snapshot = structuredClone(this.record)
    const run = this.#saving.then(() => this.store.save(snapshot, durable))
    this.#saving = run.catch((error) =>
      this.logger.error('saving the organization link failed', {
        workspaceId: snapshot.workspaceId,
        error: (error as Error).message,
      }),
    )
    return run
  }

  /** Writes a save still waiting for its timer now, and waits for every save to end. */
  async flush(): Promise<void> {
    if (this.#timer) {
      // A feed position not yet written is written now: the next start resumes from it.
      clearTimeout(this.#timer)
      this.#timer = undefined
      await this.save(false).catch(() => {})
    }
    await this.#saving
  }
}
