import { parentPort } from 'node:worker_threads';
import { currentThreadId } from '../../runtime/index.ts';

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
  // Its id, whose CPU time a job's deadline counts (off-loop-jobs.ts).
  port.postMessage({ ready: true, threadId: currentThreadId() });
}
