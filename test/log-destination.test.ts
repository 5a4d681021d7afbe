import { execFileSync, spawn } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../bench/load-server.ts';
import { FIXED_LIMITS } from '../schemas/fixed-limits.ts';
import { createLogDestination, type LogDestination, type LogDestinationOptions } from '../server/platform/log-destination.ts';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), 'ptc-log-destination-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/**
 * A named pipe, both ends open and non-blocking, as a pipe to a log reader is once Node has
 * opened it for stdout: a write to it when it is full fails with EAGAIN instead of waiting.
 */
function namedPipe(name: string): { readFd: number; writeFd: number; closeReader(): void; close(): void } {
  const path = join(scratch, name);
  execFileSync('mkfifo', [path]);
  const readFd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK);
  const writeFd = openSync(path, constants.O_WRONLY | constants.O_NONBLOCK);
  let readerOpen = true;
  const closeReader = (): void => {
    if (readerOpen) closeSync(readFd);
    readerOpen = false;
  };
  return {
    readFd,
    writeFd,
    closeReader,
    close: () => {
      closeReader();
      closeSync(writeFd);
    },
  };
}

type Pipe = ReturnType<typeof namedPipe>;

/** Runs `body` with a destination writing to a named pipe of its own; both are closed however it ends. */
async function withDestination(name: string, options: LogDestinationOptions, body: (logs: LogDestination, pipe: Pipe) => Promise<void>): Promise<void> {
  const pipe = namedPipe(name);
  const logs = createLogDestination({ fd: pipe.writeFd, ...options });
  try {
    await body(logs, pipe);
  } finally {
    await logs.close();
    pipe.close();
  }
}

/** What the pipe holds now, read without waiting ('' when empty). */
function readNow(fd: number): string {
  const chunks: Buffer[] = [];
  const buffer = Buffer.alloc(1 << 16);
  for (;;) {
    try {
      const n = readSync(fd, buffer, 0, buffer.length, null);
      if (n === 0) break;
      chunks.push(Buffer.from(buffer.subarray(0, n)));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
      throw error;
    }
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Reads the pipe until `done` says what came is all, polling; fails after 30 s. */
async function readUntil(fd: number, done: (text: string) => boolean): Promise<string> {
  let text = '';
  for (const startedAt = Date.now(); !done(text); await sleep(5)) {
    if (Date.now() - startedAt > 30_000) throw new Error(`the pipe gave ${text.length} characters and no more`);
    text += readNow(fd);
  }
  return text;
}

const line = (n: number, width = 100): string => `${JSON.stringify({ n, pad: 'x'.repeat(width) })}\n`;
/** The numbers of the whole lines in `text` (a line still arriving is left out). */
const numbersOf = (text: string): number[] =>
  text
    .slice(0, text.lastIndexOf('\n') + 1)
    .split('\n')
    .filter(Boolean)
    .map((entry) => (JSON.parse(entry) as { n: number }).n);

describe('the log destination', () => {
  it('writes short lines together once logFlushMs has passed, not one write each', () =>
    withDestination('batch', { flushMs: 20 }, async (logs, pipe) => {
      for (let n = 0; n < 3; n++) logs.stream.write(line(n));
      // Nothing is written as the lines come.
      expect(readNow(pipe.readFd)).toBe('');
      // The first read takes all three: they went out in one write.
      const first = await readUntil(pipe.readFd, (text) => text.length > 0);
      expect(numbersOf(first)).toEqual([0, 1, 2]);
      expect(logs.droppedLines()).toBe(0);
    }));

  it('writes once logBatchBytes are held, without waiting for the timer', () =>
    withDestination('full-batch', { flushMs: 3_600_000 }, async (logs, pipe) => {
      const count = Math.ceil(FIXED_LIMITS.logBatchBytes.value / line(0).length) + 1;
      for (let n = 0; n < count; n++) logs.stream.write(line(n));
      const written = await readUntil(pipe.readFd, (text) => text.length >= FIXED_LIMITS.logBatchBytes.value);
      expect(numbersOf(written)).toEqual(Array.from({ length: numbersOf(written).length }, (_, n) => n));
    }));

  it('holds no more than its bound while the pipe is not read: the lines past it are dropped and counted, the rest written whole and in order', () =>
    withDestination('bounded', { flushMs: 10, bufferBytes: 32 * 1024 }, async (logs, pipe) => {
      const count = 2_000;
      // All in one turn of the loop: no write can finish meanwhile, so the bound is met.
      for (let n = 0; n < count; n++) logs.stream.write(line(n));
      const dropped = logs.droppedLines();
      expect(dropped).toBeGreaterThan(0);
      const kept = numbersOf(await readUntil(pipe.readFd, (text) => numbersOf(text).length + dropped >= count));
      expect(kept.length + dropped).toBe(count);
      expect(kept).toEqual([...kept].sort((a, b) => a - b));
      // Read again, the pipe takes lines again.
      logs.stream.write(line(count));
      expect(numbersOf(await readUntil(pipe.readFd, (text) => text.length > 0))).toEqual([count]);
      expect(logs.droppedLines()).toBe(dropped);
    }));

  it('writes what it holds as it closes, whole lines in order, a write under way included', () =>
    withDestination('close-open', { flushMs: 3_600_000 }, async (logs, pipe) => {
      // More than the pipe takes at once (about 100 KB): the write under way is partial, the rest
      // waits for room, which the reader makes within one of sonic-boom's 100 ms waits.
      const count = 800;
      for (let n = 0; n < count; n++) logs.stream.write(line(n));
      const [, text] = await Promise.all([logs.close(), readUntil(pipe.readFd, (text) => numbersOf(text).length >= count)]);
      expect(text.endsWith('\n')).toBe(true);
      expect(numbersOf(text)).toEqual(Array.from({ length: count }, (_, n) => n));
      expect(logs.droppedLines()).toBe(0);
    }));

  it('closes on a pipe that stays full, after at most its final wait, and never waits again', { timeout: 60_000 }, () =>
    withDestination('close-full', { flushMs: 3_600_000 }, async (logs, pipe) => {
      // The reader never reads: the pipe is filled first, to its capacity.
      const filler = Buffer.alloc(4096, 'f');
      let filled = 0;
      for (;;) {
        try {
          filled += writeSync(pipe.writeFd, filler);
        } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'EAGAIN') break;
          throw error;
        }
      }
      logs.stream.write(line(0));
      await logs.close();
      // Closed, it no longer waits for room: its next write to the full pipe ends its logging.
      for (let n = 1; logs.droppedLines() === 0; n++) {
        if (n > 1_000) throw new Error('the closed destination went on waiting for room');
        logs.stream.write(line(n));
        await sleep(20);
      }
      expect(readNow(pipe.readFd)).toBe('f'.repeat(filled));
    }),
  );

  it('adds one exit listener for all its destinations, however many are made', () =>
    withDestination('listeners', {}, async (_, pipe) => {
      const before = process.listenerCount('exit');
      const made = Array.from({ length: 12 }, () => createLogDestination({ fd: pipe.writeFd }));
      expect(process.listenerCount('exit')).toBe(before);
      await Promise.all(made.map((logs) => logs.close()));
    }));

  it('stops writing, without a throw, once the reader has closed the pipe: what follows is counted as dropped', () =>
    withDestination('broken', { flushMs: 5 }, async (logs, pipe) => {
      pipe.closeReader();
      for (let n = 0; logs.droppedLines() === 0; n++) {
        if (n > 6_000) throw new Error('no line was ever counted as dropped');
        logs.stream.write(line(n));
        await sleep(5);
      }
    }));
});

/**
 * Runs test/fixtures/log-reader-gone.ts on the named pipe at `fifo`, as `how` says; its exit code,
 * or what says it did not exit within 30 s (it is then killed), and what it wrote on stderr.
 */
async function runReaderGone(fifo: string, how: 'flush' | 'exit' | 'written'): Promise<{ code: unknown; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/fixtures/log-reader-gone.ts', fifo, how], { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exited = once(child, 'exit');
  try {
    const [code] = await Promise.race([exited, sleep(30_000).then(() => ['still running 30 s on'])]);
    return { code, stderr };
  } finally {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
  }
}

describe('a log reader gone (EPIPE)', () => {
  // sonic-boom's own synchronous flush tries any failed write again every 100 ms, without end.
  it.each([
    { how: 'flush' as const, what: 'a flush' },
    { how: 'exit' as const, what: 'the write at exit' },
  ])('ends $what that fails: the process exits with its own code', { timeout: 60_000 }, async ({ how }) => {
    const fifo = join(scratch, `reader-gone-${how}`);
    execFileSync('mkfifo', [fifo]);
    const { code, stderr } = await runReaderGone(fifo, how);
    expect(code, stderr).toBe(3);
  });

  it('writes what it holds as the process exits, when the pipe takes it', { timeout: 60_000 }, async () => {
    const pipe = namedPipe('held-at-exit');
    try {
      const { code, stderr } = await runReaderGone(join(scratch, 'held-at-exit'), 'written');
      expect(code, stderr).toBe(3);
      expect(readNow(pipe.readFd)).toBe('{"msg":"held"}\n');
    } finally {
      pipe.close();
    }
  });

  it("leaves a server whose stdout's reader is gone from the start serving, and it exits on SIGTERM", { timeout: 120_000 }, async () => {
    const port = await freePort();
    const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'cli/main.ts', 'serve'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(port), LOG_LEVEL: 'info', PTC_STORE: 'memory', PTC_WORKERS: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    // The reader goes before the server has written anything: its start line meets EPIPE.
    child.stdout!.destroy();
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = once(child, 'exit');
    try {
      let status = 0;
      for (const startedAt = Date.now(); status !== 200; await sleep(100)) {
        if (child.exitCode !== null || Date.now() - startedAt > 60_000) throw new Error(`the server never answered (exit ${child.exitCode}): ${stderr}`);
        status = await fetch(`http://127.0.0.1:${port}/v1/models`, { signal: AbortSignal.timeout(2_000) }).then(
          (response) => response.status,
          () => 0,
        );
      }
      child.kill('SIGTERM');
      const [code] = await Promise.race([exited, sleep(30_000).then(() => ['still running 30 s after SIGTERM'])]);
      expect(code, stderr).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    }
  });
});

describe('a server whose stdout is not read', () => {
  it('keeps answering, drops and counts the log lines past its bound, and exits on SIGTERM', { timeout: 180_000 }, async () => {
    const pipe = namedPipe('server-stdout');
    const child = spawn(process.execPath, ['--no-node-snapshot', '--import', 'tsx', 'cli/main.ts', 'serve'], {
      cwd: ROOT,
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', PTC_STORE: 'memory', PTC_WORKERS: '0' },
      stdio: ['ignore', pipe.writeFd, 'pipe'],
    });
    closeSync(pipe.writeFd);
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    const exited = once(child, 'exit');
    try {
      // Its start line is read; after it, nothing more ever is.
      const start = await readUntil(pipe.readFd, (text) => /API at http:\/\/127\.0\.0\.1:\d+\/v1/.test(text));
      const origin = /API at (http:\/\/127\.0\.0\.1:\d+)\/v1/.exec(start)![1]!;
      // Each request logs two lines of about 250 bytes: three times the bound, with the pipe full.
      const requests = Math.ceil((3 * FIXED_LIMITS.logBufferBytes.value) / 500);
      let next = 0;
      const statuses = new Map<number, number>();
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (next < requests) {
            next += 1;
            const response = await fetch(`${origin}/v1/models`, { signal: AbortSignal.timeout(60_000) });
            await response.arrayBuffer();
            statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
          }
        }),
      );
      expect([...statuses]).toEqual([[200, requests]]);
      const metrics = await (await fetch(`${origin}/metrics`)).text();
      const dropped = Number(/^ptc_log_lines_dropped_total (\d+)$/m.exec(metrics)?.[1]);
      expect(dropped).toBeGreaterThan(0);
      child.kill('SIGTERM');
      const [code] = await Promise.race([exited, sleep(60_000).then(() => ['still running 60 s after SIGTERM'])]);
      expect(code, stderr).toBe(0);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      pipe.closeReader();
    }
  });
});
