/**
 * Wire schemas of skill bundle files, shared by both surfaces' routes and OpenAPI documents so a
 * file looks the same on the workspace server and the control plane.
 * @module
 */
import * as v from 'valibot'

const Path = v.pipe(
  v.string(),
  v.minLength(1),
  v.maxLength(512),
  v.description('Relative to the skill folder, `/`-separated, e.g. scripts/run.sh (not SKILL.md)'),
)

/** A file sent to the server. */
export const SkillFileIn = v.pipe(
  v.strictObject({
    path: Path,
    contentBase64: v.optional(v.pipe(v.string(), v.description('The bytes, base64'))),
    content: v.optional(v.pipe(v.string(), v.description('The bytes as UTF-8 text (instead of contentBase64)'))),
    executable: v.optional(v.pipe(v.boolean(), v.description('Restored as mode 0755 (else 0644)'))),
    sha256: v.optional(
      v.pipe(v.string(), v.regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex digits'), v.description('Checked when given')),
    ),
  }),
  v.check(
    (f) => (f.content === undefined) !== (f.contentBase64 === undefined),
    'give exactly one of content or contentBase64',
  ),
  v.title('SkillFileIn'),
)

/** Files sent with a skill (at most 10,000 entries on the wire; the server's limits are lower). */
export const SkillFilesIn = v.pipe(v.array(SkillFileIn), v.maxLength(10_000))

/** A file the server returns: `content` for UTF-8 text, `contentBase64` for other bytes. */
export const SkillFileOut = v.pipe(
  v.strictObject({
    path: v.string(),
    content: v.optional(v.string()),
    contentBase64: v.optional(v.string()),
    executable: v.optional(v.literal(true)),
    sha256: v.string(),
  }),
  v.title('SkillFileOut'),
)

/** A file's listing entry. */
export const SkillFileListing = v.pipe(
  v.strictObject({ path: v.string(), bytes: v.number(), executable: v.boolean(), sha256: v.string() }),
  v.title('SkillFileListing'),
)

const positiveInt = v.pipe(v.number('must be a number'), v.integer('must be a whole number'), v.minValue(1))

/**
 * The `skills` key of either surface's config file: skill folder limits (and, on the control
 * plane, zip upload limits). Every key is optional and falls back to its default.
 */
export const SkillLimitsFileSchema = v.strictObject({
  maxFiles: v.optional(positiveInt),
  maxFileBytes: v.optional(positiveInt),
  maxBytes: v.optional(positiveInt),
  maxZipBytes: v.optional(positiveInt),
  maxEntries: v.optional(positiveInt),
  maxInflatedBytes: v.optional(positiveInt),
})
