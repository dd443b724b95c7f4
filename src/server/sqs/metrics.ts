import { Counter, Histogram, type Registry } from 'prom-client';

/** Prometheus figures of the SQS endpoint, in the server's registry. */
export class SqsMetrics {
  private readonly requests: Counter<'action' | 'code'>;
  private readonly latency: Histogram<'action'>;

  constructor(
    registry: Registry,
    private readonly actions: ReadonlySet<string>,
  ) {
    this.requests = new Counter({
      name: 'leaseq_sqs_requests_total',
      help: 'SQS requests answered, by action and result (OK or the SQS error code)',
      labelNames: ['action', 'code'],
      registers: [registry],
    });
    this.latency = new Histogram({
      name: 'leaseq_sqs_request_duration_seconds',
      help: 'Time to answer an SQS request (long polls included), by action',
      labelNames: ['action'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20],
      registers: [registry],
    });
    // Each action's success series is written from the start at 0, as the stream's fixed series
    // are: one that first appears at 1 has no earlier sample, so rate() and increase() would
    // never see that first request.
    for (const action of actions) {
      this.requests.inc({ action, code: 'OK' }, 0);
      this.latency.zero({ action });
    }
  }

  observe(action: string, code: string, seconds: number): void {
    // Unknown action names are the caller's text: one label keeps the series bounded.
    const label = this.actions.has(action) ? action : 'unknown';
    this.requests.inc({ action: label, code });
    this.latency.observe({ action: label }, seconds);
  }
}
