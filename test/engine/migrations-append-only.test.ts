import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// A database records the migrations it applied by number only, so one edited after it was
// applied somewhere never runs again there: that database then lacks what the edit added, and a
// later migration that builds on it fails. Migrations are append-only: change the schema with a
// new one. A change that must not reach any database (a comment, say) updates its hash here.
const APPLIED: Record<'sqlite' | 'postgres', [file: string, sha256: string][]> = {
  sqlite: [
    ['0001_init.sql', '5af1fc1cd43d83b4'],
    ['0002_inbox.sql', 'ed5cf5bba5130f2c'],
    ['0003_inbox_processed_at.sql', '54af108611ae6ba0'],
    ['0004_counter_floors.sql', '9eabc65eb283979d'],
    ['0005_secrets.sql', '29e412993af19167'],
    ['0006_published_at.sql', '570161d8e8a6bc21'],
    ['0007_token_high_water.sql', '0b159c94ff049af4'],
    ['0008_priorities.sql', '253156f85883e6ef'],
    ['0009_message_groups.sql', 'f9359bfe6f4314cc'],
    ['0010_schedules.sql', 'ad08083337d56c0a'],
    ['0011_dead_letter_origin.sql', 'fe3c616bd2a0b285'],
    ['0012_acked_group_seq.sql', '20d9e2bdd3fce1ce'],
    ['0013_expiry.sql', '7033d9eab2786b24'],
    ['0014_generated_form.sql', '76062b964a2f5f09'],
    ['0015_oldest_ready_index.sql', 'acb2674a1d3c79cd'],
    ['0016_scaling_indexes.sql', 'f74be15b1d3ef38b'],
    ['0017_dead_letter_page_index.sql', 'd15fbd4311ab6dbd'],
    ['0018_waiting_order_index.sql', '412e8532a32a65a3'],
    ['0019_queue_incarnation.sql', '786772bb836d224a'],
  ],
  postgres: [
    ['0001_init.sql', '9673ec31b9bbbf87'],
    ['0002_inbox.sql', 'ed5cf5bba5130f2c'],
    ['0003_inbox_processed_at.sql', '8a7c2033bd4f5f4a'],
    ['0004_counter_floors.sql', '8f0d1017a93ec59a'],
    ['0005_secrets.sql', 'd3184d239adb3177'],
    ['0006_published_at.sql', '89631cc395a2997c'],
    ['0007_priorities.sql', '253156f85883e6ef'],
    ['0008_message_groups.sql', 'dd10cb22b0148711'],
    ['0009_schedules.sql', 'd2284cfbd04c6a05'],
    ['0010_dead_letter_origin.sql', 'a45d5ea55e8abd77'],
    ['0011_acked_group_seq.sql', 'b5171780942961f4'],
    ['0012_expiry.sql', '93671821be4460e5'],
    ['0013_one_statement_path.sql', 'edce17f56564449d'],
    ['0014_generated_form.sql', '76062b964a2f5f09'],
    ['0015_ack_by_token.sql', '1b86af57d97dc46f'],
    ['0016_reserve_next_event.sql', '18ce3ae9bb9b7681'],
    ['0017_plans_keep_to_indexes.sql', '6e5c460d0acc3a4b'],
    ['0018_analyze_stale_estimates.sql', '00e14c24bbf65f4f'],
    ['0019_generic_reserve_plans.sql', 'cb00c2d6a85a65ba'],
    ['0020_oldest_ready_index.sql', '12edd0fda46366a3'],
    ['0021_scaling_indexes.sql', '760db6861ae01e66'],
    ['0022_group_next_member_index.sql', '326e9c74cebf1053'],
    ['0023_queue_incarnation.sql', '9b085331fb74c709'],
  ],
};

function hashOf(path: URL): string {
  const text = readFileSync(path, 'utf8').replace(/\r\n/g, '\n');
  return createHash('sha256').update(text).digest('hex').slice(0, 16);
}

describe.each(['sqlite', 'postgres'] as const)('%s migrations are append-only', (dialect) => {
  const directory = new URL(`../../src/engine/${dialect}/migrations/`, import.meta.url);
  const files = readdirSync(directory)
    .filter((file) => file.endsWith('.sql'))
    .sort();

  it('each migration already written keeps its text', () => {
    const changed = APPLIED[dialect]
      .filter(
        ([file, sha256]) => !files.includes(file) || hashOf(new URL(file, directory)) !== sha256,
      )
      .map(([file]) => file);
    expect(changed, 'edited or removed: add a new migration instead').toEqual([]);
  });

  it('new migrations come after the ones written, each with the next number', () => {
    const numbers = files.map((file) => Number(file.slice(0, 4)));
    expect(numbers).toEqual(numbers.map((_, index) => index + 1));
    expect(files.slice(0, APPLIED[dialect].length)).toEqual(APPLIED[dialect].map(([file]) => file));
  });
});
