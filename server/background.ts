/** Why a background job was stopped: the abort signal's reason. */
export type StopReason = 'cancelled' | 'shutdown';

/**
 * Background responses running in this process: each has an AbortController so that
 * `POST /v1/responses/{id}/cancel` can stop it while it waits or before it stores its result,
 * and so that shutting down stops them all rather than waiting on them.
 */
export class BackgroundJobs {
  readonly #running = new Map<string, AbortController>();

  /** Runs `job` detached; its errors are the job's to record, never unhandled. */
  start(id: string, job: (signal: AbortSignal) => Promise<void>, onError: (error: unknown) => void): void {
    const controller = new AbortController();
    this.#running.set(id, controller);
    void job(controller.signal)
      .catch(onError)
      .finally(() => this.#running.delete(id));
  }

  /** Signals the job, if it runs here; true when it did. */
  cancel(id: string): boolean {
    const controller = this.#running.get(id);
    controller?.abort('cancelled' satisfies StopReason);
    return controller !== undefined;
  }

  /** Stops every running job and waits until each has recorded how it ended. */
  async stopAll(): Promise<void> {
    for (const controller of this.#running.values()) controller.abort('shutdown' satisfies StopReason);
    while (this.#running.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
