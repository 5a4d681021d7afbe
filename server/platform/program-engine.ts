import { ProgramRuntime, WorkerPool, type ProgramEngine, type WorkerPoolOptions } from '../../runtime/index.ts';
import type { ServerConfig } from './config.ts';

/** What the pool reports as it runs, for the log. */
export type EngineEvents = Pick<WorkerPoolOptions, 'onPinFailed' | 'onWorkerDeath'>;

/**
 * The engine that runs programs as the configuration says: supervised worker processes, or
 * isolates in this process (`PTC_WORKERS=0`). Resolves once the workers are ready. The server
 * and `npm run bench:floor`'s bare server both make theirs here, so the floor runs programs
 * exactly as the server does.
 */
export async function createProgramEngine(config: ServerConfig, events: EngineEvents = {}): Promise<ProgramEngine> {
  const runtimeOptions = {
    pausedTtlMs: config.pausedTtlMs,
    maxPausedPrograms: config.maxPausedPrograms,
    maxPausedHeapBytes: config.maxPausedHeapBytes,
    warmIsolates: config.warmIsolates,
    spinWaitMs: config.spinWaitMs,
    // Isolates are made ahead for the memory limit programs run with here.
    warmMemoryMb: config.limits.memoryMb,
  };
  if (config.workers === 0) return new ProgramRuntime(runtimeOptions);
  const pool = new WorkerPool({
    size: config.workers,
    runtime: runtimeOptions,
    heartbeatMs: config.workerHeartbeatMs,
    heartbeatTimeoutMs: config.workerHeartbeatTimeoutMs,
    maxRssBytes: config.workerMaxRssBytes,
    maxIdleCpuShare: config.workerMaxIdleCpuShare,
    pinCpus: config.workerCpuPinning,
    ...events,
  });
  await pool.ready();
  return pool;
}
