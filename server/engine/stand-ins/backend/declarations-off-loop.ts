import { createHash } from 'node:crypto';
import type { Worker } from 'node:worker_threads';
import { startModuleThread } from '../../../../runtime/index.ts';
import type { ToolSummary } from '../../conversation/tool-set.ts';

/**
 * Tool declarations for the model backend, written in a thread of their own
 * (declarations-thread.ts) so that a request's large schemas never hold up the server's loop,
 * and remembered by the hash of the tools' JSON: every turn of a conversation sends the same.
 * A job past DEADLINE_MS stops the thread and gets the plain declarations (schemas as JSON).
 */

/** Far beyond any honest set of schemas (1 MiB of them takes ~1 s). */
const DEADLINE_MS = 15_000;
const MAX_CACHED = 64;
const MAX_CACHED_CHARS = 32 * 2 ** 20;

const FROM_SOURCES = import.meta.url.endsWith('.ts');
const THREAD_ENTRY = new URL(FROM_SOURCES ? './declarations-thread.ts' : './declarations-thread.js', import.meta.url);

interface Job {
  readonly id: number;
  readonly tools: readonly ToolSummary[];
  readonly settle: (text: string | Error) => void;
}

let worker: Worker | undefined;
let ready = false;
const queue: Job[] = [];
let nextId = 1;
let timer: NodeJS.Timeout | undefined;

function stop(reason: Error): void {
  const stopped = worker;
  worker = undefined;
  clearTimeout(timer);
  queue.shift()?.settle(reason);
  void stopped?.terminate();
  postHead();
}

function postHead(): void {
  const head = queue[0];
  if (!head) {
    worker?.unref();
    return;
  }
  if (!worker) {
    const started = startModuleThread(THREAD_ENTRY);
    worker = started;
    ready = false;
    started.on('message', (reply: { ready: true } | { id: number; text?: string; error?: string }) => {
      if (worker !== started) return;
      if ('ready' in reply) {
        ready = true;
        postHead();
        return;
      }
      if (queue[0]?.id !== reply.id) return;
      clearTimeout(timer);
      queue.shift()!.settle(reply.text ?? new Error(reply.error));
      postHead();
    });
    started.on('error', (error) => worker === started && stop(error));
    started.on('exit', (code) => worker === started && stop(new Error(`the declarations thread exited (code ${code})`)));
  }
  worker.ref();
  if (!ready) return;
  timer = setTimeout(() => stop(new Error(`writing the declarations took over ${DEADLINE_MS} ms`)), DEADLINE_MS);
  worker.postMessage({ id: head.id, tools: head.tools });
}

const cache = new Map<string, string>();
let cachedChars = 0;

function remember(key: string, text: string): void {
  while (cache.size > 0 && (cache.size >= MAX_CACHED || cachedChars + text.length > MAX_CACHED_CHARS)) {
    const [oldest, evicted] = cache.entries().next().value!;
    cache.delete(oldest);
    cachedChars -= evicted.length;
  }
  cache.set(key, text);
  cachedChars += text.length;
}

/** The declarations of `tools` (toolDeclarations), written off the loop; a failure rejects. */
export async function declarationsOffLoop(tools: readonly ToolSummary[]): Promise<string> {
  const key = createHash('sha256').update(JSON.stringify(tools)).digest('hex');
  const known = cache.get(key);
  if (known !== undefined) {
    cache.delete(key);
    cache.set(key, known);
    return known;
  }
  const text = await new Promise<string>((resolve, reject) => {
    queue.push({ id: nextId++, tools, settle: (result) => (typeof result === 'string' ? resolve(result) : reject(result)) });
    if (queue.length === 1) postHead();
  });
  remember(key, text);
  return text;
}
