import { parentPort } from 'node:worker_threads';
import type { ToolSummary } from '../../conversation/tool-set.ts';
import { toolDeclarations } from './tool-declarations.ts';

/**
 * The thread that writes tool declarations (declarations-off-loop.ts starts it): generating
 * TypeScript from a schema costs ~0.6 ms of CPU per KiB, ~700 ms for the 1 MiB of schemas a
 * request may carry, which the server's loop must not spend.
 */
parentPort!.on('message', (job: { id: number; tools: readonly ToolSummary[] }) => {
  toolDeclarations(job.tools).then(
    (declarations) => parentPort!.postMessage({ id: job.id, text: declarations.text }),
    (error: unknown) => parentPort!.postMessage({ id: job.id, error: error instanceof Error ? error.message : String(error) }),
  );
});
parentPort!.postMessage({ ready: true });
