/**
 * Error codes of the OpenCode formats both surfaces read: skill bundles (files a client sends or
 * an archive holds) and zip archives. Both surface catalogues spread these; see
 * `src/core/error-catalogue.ts`.
 * @module
 */
import { defineErrors, errorFactory } from '../core/error-catalogue.ts'

/** Codes produced by `src/opencode`. */
export const OPENCODE_ERRORS = defineErrors({
  skill_file_too_large: { status: 413, description: 'One file of the skill is over the per-file limit' },
  skill_too_large: { status: 413, description: 'The skill files together are over the size limit' },
  zip_bomb: { status: 413, description: 'The archive inflates past the limit; refused as a zip bomb' },
  zip_too_large: { status: 413, description: 'The archive is over the size limit' },
  invalid_skill_file: { status: 422, description: 'A skill file is not valid (encoding, base64 or content)' },
  invalid_skill_file_path: { status: 422, description: 'A skill file path is not allowed (escapes, reserved names)' },
  skill_file_checksum_mismatch: { status: 422, description: "A skill file's sha256 does not match its bytes" },
  skill_file_duplicate: {
    status: 422,
    description: 'The skill names the same file twice, or a file and a folder alike',
  },
  skill_too_many_files: { status: 422, description: 'The skill has more files than allowed' },
  invalid_zip: { status: 422, description: 'Not a readable zip archive (corrupt, encrypted, zip64 or empty)' },
  zip_duplicate_entry: { status: 422, description: 'The archive holds the same entry name twice' },
  zip_entry_escapes: { status: 422, description: 'An archive entry name is not a safe relative path' },
  zip_entry_not_file: { status: 422, description: 'An archive entry is a device or other non-file' },
  zip_entry_outside_skill: { status: 422, description: 'An archive entry belongs to no skill folder' },
  zip_entry_symlink: {
    status: 422,
    description: 'An archive entry is a symbolic link; skills hold regular files only',
  },
  zip_nested_skill: { status: 422, description: 'A skill folder in the archive is inside another skill folder' },
  zip_no_skill: { status: 422, description: 'The archive holds no SKILL.md' },
  zip_too_many_entries: { status: 422, description: 'The archive has more entries than allowed' },
})

/** An OpenCode-format error code. */
export type OpencodeErrorCode = keyof typeof OPENCODE_ERRORS

/** Makes an error with one of the {@link OPENCODE_ERRORS} codes. */
export const opencodeError = errorFactory(OPENCODE_ERRORS)
