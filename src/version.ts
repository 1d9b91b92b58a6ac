/** The product version, read from package.json at build time so the binary carries it. */
import pkg from '../package.json' with { type: 'json' }

/** Semantic version of this build. */
export const VERSION: string = pkg.version
