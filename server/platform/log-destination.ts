import sonicBoom from 'sonic-boom';
import { FIXED_LIMITS } from '../../schemas/fixed-limits.ts';

/**
 * Where the server's pino logs go by default: stdout, written beside the loop in batches, and
 * bounded. pino's own default writes each line as it comes, and on this project's machine the
 * write of each line (handed to libuv's thread pool, which it wakes) took a tenth of a busy
 * server's CPU (README, "Logs in batches"). It also held every line while stdout was not read,
 * without bound, and as the process exited it waited for that reader: a server whose log reader
 * stopped grew without end and never exited on SIGTERM. A descriptor that blocks (a terminal
 * paused, a pipe Node left blocking) still holds a write in libuv's thread pool while it blocks,
 * and with it the process's exit, which waits for that pool's threads.
 */
export interface LogDestination {
  /** pino's destination: one line per write. */
  readonly stream: { write(line: string): void };
  /** Writes the lines held now, before this returns, unless a write is under way or the pipe is full (they then follow it). */
  flush(): void;
  /** Lines dropped so far: past logBufferBytes (their reader slower than the server logs), or once stdout broke. */
  droppedLines(): number;
  /**
   * Writes what is held, beside the loop, and resolves once it is written or after at most
   * FINAL_WRITE_MS (what is left then is dropped); later lines are written as they come.
   */
  close(): Promise<void>;
}

export interface LogDestinationOptions {
  /** The file descriptor written to: stdout unless given. */
  readonly fd?: number;
  readonly batchBytes?: number;
  readonly bufferBytes?: number;
  readonly flushMs?: number;
}

/** What one write to the descriptor takes at most (see maxWrite below). */
const MAX_WRITE_BYTES = 65_536;

/** The longest a closing destination waits for what it holds to be written. */
const FINAL_WRITE_MS = 1_000;

/**
 * How often a synchronous write at process exit tries a full pipe again: sonic-boom waits
 * 100 ms before each, so about a second in all. (Beside the loop, it tries again for as long as
 * the pipe stays full while the destination is open: the lines held meanwhile are bounded.)
 */
const FINAL_WRITE_ATTEMPTS = 10;

// A CommonJS module whose class is its `module.exports`, also named there as `SonicBoom`.
const { SonicBoom } = sonicBoom;
type Boom = InstanceType<typeof SonicBoom>;

/**
 * Whether sonic-boom has a write under way, which it keeps in `_writing` (4.2.1, pinned; it has
 * no public way to tell). Its flushSync skips the buffer of a write under way: called then, it
 * would write later lines first, and cut a line a partial write left unfinished.
 */
const writeUnderWay = (boom: Boom): boolean => (boom as unknown as { _writing: boolean })._writing;

/** The destinations not closed: at process exit, each writes what it holds (one listener for all). */
const open = new Set<() => void>();
let listening = false;

export function createLogDestination(options: LogDestinationOptions = {}): LogDestination {
  const flushMs = options.flushMs ?? FIXED_LIMITS.logFlushMs.value;
  const bufferBytes = options.bufferBytes ?? FIXED_LIMITS.logBufferBytes.value;
  /** Set while the lines held are written synchronously at exit: how many more waits on a full pipe are left. */
  let finalAttempts: number | undefined;
  let state: 'open' | 'closing' | 'closed' = 'open';
  const boom = new SonicBoom({
    fd: options.fd ?? 1,
    sync: false,
    minLength: options.batchBytes ?? FIXED_LIMITS.logBatchBytes.value,
    maxLength: bufferBytes,
    // What one write takes: a pipe's capacity on Linux (a larger write to a pipe is cut there
    // anyway). At sonic-boom's default, 16 KiB a write and one write a turn of the loop, a server
    // flooded with requests outran a reader that kept up (`cat`) and dropped lines; far larger,
    // sonic-boom's count of the bytes gathered for the next write, made at every line, grows with it.
    maxWrite: MAX_WRITE_BYTES,
    // A full pipe is waited for beside the loop until the destination is closed; synchronously
    // at exit, a bounded number of times.
    retryEAGAIN: () => (finalAttempts === undefined ? state !== 'closed' : finalAttempts-- > 0),
  });
  let dropped = 0;
  /** Bytes handed to the stream and not yet written. */
  let held = 0;
  let broken = false;
  let timer: NodeJS.Timeout | undefined;

  // A write of nothing is a flush that found nothing held.
  boom.on('write', (bytes: number) => {
    held = bytes === 0 ? 0 : Math.max(0, held - bytes);
  });
  // A line past the bound is never held: sonic-boom drops it as it comes.
  boom.on('drop', (line: string) => {
    dropped += 1;
    held = Math.max(0, held - Buffer.byteLength(line));
  });
  // The reader went away (EPIPE) or the descriptor failed: logging stops there, and the lines
  // that come after are counted as dropped. Never thrown: a log is not worth the server.
  boom.on('error', () => {
    broken = true;
    held = 0;
    clearTimeout(timer);
  });

  /** Has what is held written flushMs from now, unless a batch goes first. */
  const armFlush = (): void => {
    if (timer !== undefined || held <= 0 || broken || state !== 'open') return;
    timer = setTimeout(() => {
      timer = undefined;
      if (held > 0 && !broken) boom.flush();
    }, flushMs);
    timer.unref();
  };
  // A write ended with fewer than a batch of lines come meanwhile: they wait flushMs, no longer.
  boom.on('drain', armFlush);

  /** Writes what is held before returning, waiting on a full pipe at most `attempts` times; nothing while a write is under way. */
  const writeHeldNow = (attempts: number): void => {
    if (broken || held <= 0 || writeUnderWay(boom)) return;
    finalAttempts = attempts;
    try {
      boom.flushSync();
      held = 0;
    } catch {
      // Still full after the last attempt: what is left stays held (at exit, it is lost). A
      // buffer it had begun is held whole, so its start is written twice if the pipe takes it
      // later: only the start line's flush (the CLI's) can see that, its pipe full at start.
    } finally {
      finalAttempts = undefined;
    }
  };

  const atExit = (): void => writeHeldNow(FINAL_WRITE_ATTEMPTS);
  open.add(atExit);
  if (!listening) {
    listening = true;
    process.on('exit', () => {
      for (const write of open) write();
    });
  }

  /** Resolves once nothing is held, or after FINAL_WRITE_MS. */
  const written = (): Promise<void> =>
    new Promise((resolve) => {
      const deadline = setTimeout(resolve, FINAL_WRITE_MS);
      const next = (): void => {
        if (held <= 0 || broken) {
          clearTimeout(deadline);
          resolve();
          return;
        }
        // Called back at the end of the write under way (or of this one), with or without an error.
        boom.flush(() => setImmediate(next));
      };
      next();
    });

  return {
    stream: {
      write(line: string): void {
        if (broken) {
          dropped += 1;
          return;
        }
        held += Buffer.byteLength(line);
        boom.write(line);
        if (state === 'open') armFlush();
        else boom.flush();
      },
    },
    flush: () => writeHeldNow(0),
    droppedLines: () => dropped,
    async close(): Promise<void> {
      if (state !== 'open') return;
      state = 'closing';
      clearTimeout(timer);
      timer = undefined;
      open.delete(atExit);
      await written();
      state = 'closed';
    },
  };
}
