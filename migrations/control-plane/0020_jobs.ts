/**
 * Durable jobs: discovery, sync and Worker provisioning run from this table so they survive a
 * restart or crash. A job is claimed by compare-and-set on (status, lease), runs under a lease that
 * its runner renews, and a lease that runs out (the runner died) makes the job claimable again.
 */
import type { Kysely } from 'kysely'

export async function up(db: Kysely<any>): Promise<void> {
  await db.schema
    .createTable('job')
    .addColumn('id', 'text', (c) => c.primaryKey())
    .addColumn('org_id', 'text', (c) => c.references('organization.id').onDelete('cascade'))
    .addColumn('kind', 'text', (c) => c.notNull())
    .addColumn('subject_id', 'text')
    .addColumn('payload', 'text', (c) => c.notNull())
    .addColumn('status', 'text', (c) => c.notNull())
    .addColumn('attempts', 'integer', (c) => c.notNull().defaultTo(0))
    .addColumn('max_attempts', 'integer', (c) => c.notNull())
    .addColumn('deadline_ms', 'integer', (c) => c.notNull())
    .addColumn('run_at', 'text', (c) => c.notNull())
    .addColumn('locked_by', 'text')
    .addColumn('lease_until', 'text')
    .addColumn('last_error', 'text')
    .addColumn('last_reason', 'text')
    .addColumn('result', 'text')
    .addColumn('created_at', 'text', (c) => c.notNull())
    .addColumn('updated_at', 'text', (c) => c.notNull())
    .addColumn('started_at', 'text')
    .addColumn('finished_at', 'text')
    .execute()
  // Claim: due queued jobs in run_at order; expired leases of running jobs.
  await db.schema.createIndex('job_status_run_at_idx').on('job').columns(['status', 'run_at', 'id']).execute()
  await db.schema.createIndex('job_status_lease_idx').on('job').columns(['status', 'lease_until']).execute()
  // Lists per organization, newest first, optionally by status or kind.
  await db.schema.createIndex('job_org_id_idx').on('job').columns(['org_id', 'id']).execute()
  await db.schema.createIndex('job_org_status_id_idx').on('job').columns(['org_id', 'status', 'id']).execute()
  await db.schema.createIndex('job_subject_idx').on('job').columns(['subject_id', 'id']).execute()
}

export async function down(db: Kysely<any>): Promise<void> {
  await db.schema.dropTable('job').execute()
}
