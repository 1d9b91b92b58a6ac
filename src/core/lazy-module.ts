/**
 * Loads a module on first use and remembers it.
 *
 * Why: heavy parsers (YAML, JSONC) cost start-up time and resident memory even when a server never
 * touches a skill or a config file; importing them on first use keeps an idle server small.
 * @module
 */

/** Returns a function that imports the module once and resolves to it on every call. */
export function lazyModule<T>(load: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined
  return () =>
    (pending ??= load().catch((error) => {
      pending = undefined
      throw error
    }))
}
