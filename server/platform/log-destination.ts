import sonicBoom from 'sonic-boom';
import { FIXED_LIMITS } from '../../schemas/fixed-limits.ts';

/**
 * Where the server's pino logs go by default: stdout, written beside the loop in batches, and
 * bounded. pino's own default writes each line as it comes, and on this project's machine the
 * write of each line (handed to libuv's thread pool, which it wakes) took a tenth of a busy
 * server's CPU (README, "Logs in batches"). It also holds every line while stdout is not read, without bound, and
 * as the process exits it waits for a reader that may never come: a server whose log reader
 * stopped grew without end and never exited on SIGTERM.
 */
export interface LogDestination {
  /** pino's destination: one line per write. */
  readonly stream: { write(line: string): void };
  /** Writes the lines held now, before this returns, without waiting on a full pipe (what it does not take stays held). */
  flush(): void;
  /** Lines dropped so far: past logBufferBytes, or once stdout broke. */
  droppedLines(): number;
  /** Writes the lines held (on a full pipe, for at most about a second); later lines are written at once, or dropped on a full pipe. */
  close(): void;
}

export interface LogDestinationOptions {
  /** The file descriptor written to: stdout unless given. */
  readonly fd?: number;
  readonly batchBytes?: number;
  readonly bufferBytes?: number;
  readonly flushMs?: number;
}

/**
 * How often a write to a full pipe is tried again as the destination closes or the process
 * exits: sonic-boom waits 100 ms before each, so about a second in all. Beside the loop, it
 * tries again for as long as the pipe stays full: the lines held meanwhile are bounded.
 */
const FINAL_WRITE_ATTEMPTS = 10;

// A CommonJS module whose class is its `module.exports`, also named there as `SonicBoom`.
const { SonicBoom } = sonicBoom;

export function createLogDestination(options: LogDestinationOptions = {}): LogDestination {
  const flushMs = options.flushMs ?? FIXED_LIMITS.logFlushMs.value;
  /** Set while the lines held are written at once (flushSync): how many more waits on a full pipe are left. */
  let finalAttempts: number | undefined;
  const boom = new SonicBoom({
    fd: options.fd ?? 1,
    sync: false,
    minLength: options.batchBytes ?? FIXED_LIMITS.logBatchBytes.value,
    maxLength: options.bufferBytes ?? FIXED_LIMITS.logBufferBytes.value,
    // A full pipe is waited for beside the loop while the destination is open; as lines are
    // written at once (flushSync), a bounded number of times.
    retryEAGAIN: () => (finalAttempts === undefined ? !closed : finalAttempts-- > 0),
  });
  let dropped = 0;
  /** Bytes handed to the stream and not yet written. */
  let held = 0;
  let broken = false;
  let closed = false;
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
  // The reader went away (EPIPE) or the descriptor failed: logging stops there, and what it would
  // have written is counted as dropped. Never thrown: a log is not worth the server.
  boom.on('error', () => {
    broken = true;
    held = 0;
    clearTimeout(timer);
  });

  /** Has what is held written flushMs from now, unless a batch goes first. */
  const armFlush = (): void => {
    if (timer !== undefined || held <= 0 || broken || closed) return;
    timer = setTimeout(() => {
      timer = undefined;
      if (held > 0 && !broken) boom.flush();
    }, flushMs);
    timer.unref();
  };
  // A write ended with fewer than a batch of lines come meanwhile: they wait flushMs, no longer.
  boom.on('drain', armFlush);

  /** Writes what is held now, waiting on a full pipe at most `attempts` times; what is left after them is dropped. */
  const writeHeldNow = (attempts: number): void => {
    finalAttempts = attempts;
    try {
      if (!broken) boom.flushSync();
      held = 0;
    } catch {
      // Still full after the last attempt (or broken meanwhile): what is left stays held, and
      // is dropped at the close.
    } finally {
      finalAttempts = undefined;
    }
  };

  const onExit = (): void => writeHeldNow(FINAL_WRITE_ATTEMPTS);
  process.on('exit', onExit);

  return {
    stream: {
      write(line: string): void {
        if (broken) {
          dropped += 1;
          return;
        }
        held += Buffer.byteLength(line);
        boom.write(line);
        if (closed) writeHeldNow(0);
        else armFlush();
      },
    },
    flush: () => writeHeldNow(0),
    droppedLines: () => dropped,
    close(): void {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      timer = undefined;
      process.off('exit', onExit);
      writeHeldNow(FINAL_WRITE_ATTEMPTS);
    },
  };
}
