import { writeSync } from 'node:fs';
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
  /**
   * Writes the lines held now, beside the loop; resolves once they are written, the pipe broke, or
   * after at most FINAL_WRITE_MS (the rest then follows as the pipe takes it).
   */
  flush(): Promise<void>;
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
 * How often the synchronous write at process exit tries a full pipe again, FULL_PIPE_WAIT_MS
 * apart: about a second in all. (Beside the loop, sonic-boom tries again for as long as the pipe
 * stays full while the destination is open: the lines held meanwhile are bounded.)
 */
const FINAL_WRITE_ATTEMPTS = 10;
const FULL_PIPE_WAIT_MS = 100;

// A CommonJS module whose class is its `module.exports`, also named there as `SonicBoom`.
const { SonicBoom } = sonicBoom;
type Boom = InstanceType<typeof SonicBoom>;

/**
 * What sonic-boom (4.2.1, pinned; text mode) keeps of the lines not written yet, which it has no
 * public way to hand over: whether a write is under way (or waits to try a full pipe again), the
 * text of the last write (left there when it failed), and the lines gathered since. The
 * synchronous write at exit is ours (writeHeldAtExit), since sonic-boom's own flushSync, on any
 * error but a full pipe (EPIPE from a reader gone, EIO), waits 100 ms and tries again, without
 * end: a server whose log reader had gone never exited.
 */
interface BoomHeld {
  _writing: boolean;
  _writingBuf: string;
  _bufs: string[];
  _len: number;
}
const heldBy = (boom: Boom): BoomHeld => boom as unknown as BoomHeld;

/** The text sonic-boom holds unwritten (see BoomHeld), as the bytes it writes. */
const unwritten = (inner: BoomHeld): Buffer => Buffer.from(inner._writingBuf + inner._bufs.join(''), 'utf8');

/** Blocks this thread for `ms` (the process is exiting: nothing else is left to run). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** The lines in what was left unwritten (a last, cut one counts). */
function linesIn(text: Buffer): number {
  let lines = 0;
  for (let at = text.indexOf(10); at >= 0; at = text.indexOf(10, at + 1)) lines += 1;
  return text.length > 0 && text[text.length - 1] !== 10 ? lines + 1 : lines;
}

/** The destinations not closed: at process exit, each writes what it holds (one listener for all). */
const open = new Set<() => void>();
let listening = false;

export function createLogDestination(options: LogDestinationOptions = {}): LogDestination {
  const flushMs = options.flushMs ?? FIXED_LIMITS.logFlushMs.value;
  const bufferBytes = options.bufferBytes ?? FIXED_LIMITS.logBufferBytes.value;
  const fd = options.fd ?? 1;
  let state: 'open' | 'closing' | 'closed' = 'open';
  const boom = new SonicBoom({
    fd,
    sync: false,
    minLength: options.batchBytes ?? FIXED_LIMITS.logBatchBytes.value,
    maxLength: bufferBytes,
    // What one write takes: a pipe's capacity on Linux (a larger write to a pipe is cut there
    // anyway). At sonic-boom's default, 16 KiB a write and one write a turn of the loop, a server
    // flooded with requests outran a reader that kept up (`cat`) and dropped lines; far larger,
    // sonic-boom's count of the bytes gathered for the next write, made at every line, grows with it.
    maxWrite: MAX_WRITE_BYTES,
    // A full pipe is waited for beside the loop until the destination is closed.
    retryEAGAIN: () => state !== 'closed',
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
    // What the failed write had, and what waited behind it, is lost: counted, as at exit.
    dropped += linesIn(unwritten(heldBy(boom)));
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

  /**
   * Writes what is held before returning, as the process exits: waiting on a full pipe
   * FINAL_WRITE_ATTEMPTS times at most, and stopping at any other error. Nothing while a write is
   * under way: its buffer is sonic-boom's until it ends, and writing later lines first would cut
   * the line it left unfinished.
   */
  const writeHeldAtExit = (): void => {
    const inner = heldBy(boom);
    if (broken || held <= 0 || inner._writing) return;
    let rest = unwritten(inner);
    inner._writingBuf = '';
    inner._bufs = [];
    inner._len = 0;
    held = 0;
    for (let waits = FINAL_WRITE_ATTEMPTS; rest.length > 0; ) {
      try {
        rest = rest.subarray(writeSync(fd, rest));
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        if ((code === 'EAGAIN' || code === 'EBUSY') && waits-- > 0) {
          sleepSync(FULL_PIPE_WAIT_MS);
          continue;
        }
        dropped += linesIn(rest);
        broken = true;
        return;
      }
    }
  };

  open.add(writeHeldAtExit);
  if (!listening) {
    listening = true;
    process.on('exit', () => {
      for (const write of open) write();
    });
  }

  /** Resolves once nothing is held or the pipe broke, or after FINAL_WRITE_MS. */
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
    flush: written,
    droppedLines: () => dropped,
    async close(): Promise<void> {
      if (state !== 'open') return;
      state = 'closing';
      clearTimeout(timer);
      timer = undefined;
      open.delete(writeHeldAtExit);
      await written();
      state = 'closed';
    },
  };
}
