import { readFileSync } from 'node:fs';
import ivm from 'isolated-vm';

const PRELUDE_SOURCE = readFileSync(new URL('./guest-prelude.js', import.meta.url), 'utf8');

/** An isolate with its context and the prelude compiled and run: ready for one program's config. */
export interface PreparedIsolate {
  readonly isolate: ivm.Isolate;
  readonly context: ivm.Context;
  /** The prelude, compiled in this isolate (a strict-parameters checker runs it once more). */
  readonly script: ivm.Script;
  /** The prelude's installer: takes the program's config (JSON) and returns its dispatcher. */
  readonly install: ivm.Reference<(configJson: string) => unknown>;
}

/**
 * Bounds the prelude's own run when an isolate is made ahead of a program (no step's clock is
 * running then). The prelude is ours and defines functions only: it takes a few milliseconds.
 */
const PRELUDE_TIMEOUT_MS = 5_000;

/** A new isolate of `memoryMb` with the prelude run in it; `timeoutMs` bounds that run. */
export async function prepareIsolate(memoryMb: number, timeoutMs: number = PRELUDE_TIMEOUT_MS): Promise<PreparedIsolate> {
  const isolate = new ivm.Isolate({ memoryLimit: memoryMb });
  try {
    const context = await isolate.createContext();
    const script = await isolate.compileScript(PRELUDE_SOURCE, { filename: 'ptc:prelude' });
    const install = (await script.run(context, { reference: true, timeout: timeoutMs })) as ivm.Reference<(configJson: string) => unknown>;
    return { isolate, context, script, install };
  } catch (error) {
    if (!isolate.isDisposed) isolate.dispose();
    throw error;
  }
}

/**
 * Isolates made ahead of demand, so that starting a program does not wait for an isolate, its
 * context and the prelude (most of a light program's cost). Each is fresh: made for one
 * program, handed out once, never given back; nothing of a request is in it before it is
 * taken. At most `size` wait at any time, for the memory limit last asked for, and one is made
 * at a time, after the program that took the last one has started.
 */
export class WarmIsolates {
  readonly #size: number;
  #memoryMb: number | undefined;
  #ready: PreparedIsolate[] = [];
  #filling = false;
  #closed = false;

  constructor(size: number) {
    this.#size = size;
  }

  /** A prepared isolate of `memoryMb`, if one is waiting; the pool starts making the next. */
  take(memoryMb: number): PreparedIsolate | undefined {
    if (this.#closed || this.#size === 0) return undefined;
    if (memoryMb !== this.#memoryMb) {
      // Programs now ask for another memory limit: those made for the old one would go unused.
      this.#memoryMb = memoryMb;
      this.#disposeReady();
    }
    const taken = this.#ready.shift();
    setImmediate(() => void this.#fill());
    return taken;
  }

  /** How many wait now (for tests and metrics). */
  get ready(): number {
    return this.#ready.length;
  }

  close(): void {
    this.#closed = true;
    this.#disposeReady();
  }

  async #fill(): Promise<void> {
    if (this.#filling) return;
    this.#filling = true;
    try {
      while (!this.#closed && this.#memoryMb !== undefined && this.#ready.length < this.#size) {
        const memoryMb = this.#memoryMb;
        const prepared = await prepareIsolate(memoryMb);
        if (this.#closed || memoryMb !== this.#memoryMb) prepared.isolate.dispose();
        else this.#ready.push(prepared);
      }
    } catch {
      // A failure to make one ahead (out of memory, say) costs nothing: the next program makes its own.
    } finally {
      this.#filling = false;
    }
  }

  #disposeReady(): void {
    for (const { isolate } of this.#ready.splice(0)) if (!isolate.isDisposed) isolate.dispose();
  }
}
