import type { FastifyInstance } from 'fastify';
import type { ProgramEngine } from '../../../runtime/index.ts';
import type { LogDestination } from '../../platform/log-destination.ts';
import type { ArrivingBodies } from '../http/arriving-bodies.ts';

interface Metric {
  readonly name: string;
  readonly type: 'counter' | 'gauge';
  readonly help: string;
  readonly samples: readonly (readonly [labels: string, value: number])[];
}

function exposition(metrics: readonly Metric[]): string {
  return metrics
    .map((metric) =>
      [
        `# HELP ${metric.name} ${metric.help}`,
        `# TYPE ${metric.name} ${metric.type}`,
        ...metric.samples.map(([labels, value]) => `${metric.name}${labels} ${value}`),
      ].join('\n'),
    )
    .join('\n')
    .concat('\n');
}

/**
 * `GET /metrics`: Prometheus text of the program runtime and its cache of paused isolates, of the
 * request bodies arriving, and of the log lines dropped (`logs`: the server's own destination,
 * absent when the embedder brought its logger).
 */
export function registerMetricsRoutes(app: FastifyInstance, runtime: ProgramEngine, arrivingBodies: ArrivingBodies, logs: LogDestination | undefined): void {
  app.get('/metrics', async (_, reply) => {
    const stats = runtime.stats();
    reply.type('text/plain; version=0.0.4; charset=utf-8');
    return exposition([
      { name: 'ptc_programs_started_total', type: 'counter', help: 'Programs started.', samples: [['', stats.started]] },
      {
        name: 'ptc_program_resumes_total',
        type: 'counter',
        help: 'Program resumes, by path: warm (the paused isolate, a cache hit) or replay (a miss).',
        samples: [
          ['{path="warm"}', stats.resumes.warm],
          ['{path="replay"}', stats.resumes.replay],
        ],
      },
      {
        name: 'ptc_paused_program_evictions_total',
        type: 'counter',
        help: 'Paused isolates dropped from the cache, by reason.',
        samples: [
          ['{reason="ttl"}', stats.evictions.ttl],
          ['{reason="count"}', stats.evictions.count],
          ['{reason="memory"}', stats.evictions.memory],
        ],
      },
      { name: 'ptc_paused_programs', type: 'gauge', help: 'Paused isolates held.', samples: [['', stats.paused]] },
      ...(stats.workers
        ? [
            { name: 'ptc_workers', type: 'gauge' as const, help: 'Worker processes alive.', samples: [['', stats.workers.alive] as const] },
            {
              name: 'ptc_worker_deaths_total',
              type: 'counter' as const,
              help: 'Worker processes that died and were replaced, by cause: exit (crashed), heartbeat, rss, cpu, deadline (killed by the supervisor).',
              samples: (Object.entries(stats.workers.deaths) as [string, number][]).map(([reason, count]) => [`{reason="${reason}"}`, count] as const),
            },
            {
              name: 'ptc_worker_step_retries_total',
              type: 'counter' as const,
              help: 'Steps run again by themselves on a spare worker after the worker running them died of something else.',
              samples: [['', stats.workers.retried] as const],
            },
          ]
        : []),
      { name: 'ptc_paused_programs_heap_bytes', type: 'gauge', help: 'Heap of the paused isolates held.', samples: [['', stats.pausedHeapBytes]] },
      {
        name: 'ptc_request_body_bytes_arriving',
        type: 'gauge',
        help: 'Bytes received of request bodies not yet whole (at most PTC_MAX_ARRIVING_BODY_BYTES).',
        samples: [['', arrivingBodies.bytes]],
      },
      {
        name: 'ptc_log_lines_dropped_total',
        type: 'counter',
        help: 'Log lines dropped: stdout read slower than the server logs, logBufferBytes of them held, or closed by its reader.',
        samples: [['', logs?.droppedLines() ?? 0]],
      },
    ]);
  });
}
