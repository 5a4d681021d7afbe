import { parentPort } from 'node:worker_threads';

/** The thread side of OffLoopJobs (off-loop-jobs.ts): answers each job with `work`'s result or its error's message. */
export function serveJobs<Job, Result>(work: (job: Job) => Result | Promise<Result>): void {
  const port = parentPort;
  if (!port) throw new Error('serveJobs runs in a worker thread');
  port.on('message', ({ id, job }: { id: number; job: Job }) => {
    Promise.resolve()
      .then(() => work(job))
      .then(
        (result) => port.postMessage({ id, result }),
        (error: unknown) => port.postMessage({ id, error: error instanceof Error ? error.message : String(error) }),
      );
  });
  port.postMessage({ ready: true });
}
