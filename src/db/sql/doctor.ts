// kiln.doctor_check, kiln.doctor_fix and kiln.doctor_stored_objects: `kiln doctor` (src/cli/doctor.ts).

import type { Queryable } from '../pool.ts';

/** One check of kiln.doctor_check: how many it found, how many of those kiln.doctor_fix repairs, and the first of them. */
export interface DoctorFinding {
  count: number;
  fixable: number;
  items: Array<Record<string, unknown> & { fixable: boolean }>;
}

export interface DoctorChecks {
  dead_workers: DoctorFinding;
  orphan_jobs: DoctorFinding;
  orphan_charges: DoctorFinding;
  unsettled_reservations: DoctorFinding;
  double_charges: DoctorFinding;
  missing_objects: DoctorFinding;
}

export interface DoctorFixed {
  workers_forgotten: number;
  pools_unlocked: number;
  jobs_unlocked: number;
  reservations_released: number;
  released_micros: number;
}

export function doctorCheck(sql: Queryable, staleSeconds: number, executionSeconds: number, graceSeconds: number, limit: number) {
  return sql<Array<{ r: DoctorChecks }>>`
    select kiln.doctor_check(${staleSeconds}::int, ${executionSeconds}::int, ${graceSeconds}::int, ${limit}::int) as r`;
}

export function doctorFix(sql: Queryable, staleSeconds: number) {
  return sql<Array<{ r: DoctorFixed }>>`select kiln.doctor_fix(${staleSeconds}::int) as r`;
}

export function doctorStoredObjects(sql: Queryable, newest: boolean, after: string | null, limit: number) {
  return sql<Array<{ path: string; location: string; created_at: Date }>>`
    select * from kiln.doctor_stored_objects(${newest}, ${after}, ${limit}::int)`;
}
