/**
 * The floor of the core benchmark: the least bookkeeping that still does the core's job, as bare
 * loops over a Map of jobs, an array used as a FIFO (push, then a head pointer instead of shift)
 * and a Map of active deliveries keyed by an incrementing token. No validation, no duplicate
 * check, no stats, no history: whatever the core spends beyond this is its own overhead.
 */
interface FloorJob {
  id: string;
  payload: unknown;
  deliveryCount: number;
}

interface FloorDelivery {
  job: FloorJob;
  deadline: number;
}

export function floorWorkload(visibility = 30_000) {
  const jobs = new Map<string, FloorJob>();
  const fifo: FloorJob[] = [];
  let head = 0;
  const active = new Map<number, FloorDelivery>();
  let nextToken = 1;
  let now = 0;
  let acked = 0;

  return {
    publishAll(jobCount: number): void {
      for (let i = 0; i < jobCount; i++) {
        const id = `j${i}`;
        const job: FloorJob = { id, payload: { n: i }, deliveryCount: 0 };
        jobs.set(id, job);
        fifo.push(job);
        now++;
      }
    },

    reserveAckAll(jobCount: number): void {
      for (let i = 0; i < jobCount; i++) {
        // reserve: take from the front, hand out a fresh token with a deadline
        const job = fifo[head++];
        if (job === undefined) throw new Error(`floor: FIFO empty at job ${i}`);
        job.deliveryCount++;
        const token = nextToken++;
        active.set(token, { job, deadline: now++ + visibility });
        // ack: find the delivery by token, forget it and its job
        const delivery = active.get(token);
        if (delivery === undefined) throw new Error(`floor: token ${token} not active`);
        active.delete(token);
        jobs.delete(delivery.job.id);
        acked++;
        now++;
      }
    },

    verify(jobCount: number): void {
      if (acked !== jobCount || jobs.size !== 0 || active.size !== 0 || head !== fifo.length) {
        throw new Error(`floor: acked ${acked} of ${jobCount}, ${jobs.size} jobs left`);
      }
    },
  };
}
