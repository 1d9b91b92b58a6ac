/**
 * Table types of the control-plane database (the kysely `DB` type). One interface per table,
 * in the column names the migrations create.
 * @module
 */

/** `instance`: one row identifying this database. */
export interface InstanceTable {
  id: string
  created_at: string
  schema_note: string | null
}

/** All control-plane tables. */
export interface ControlPlaneDb {
  instance: InstanceTable
}
