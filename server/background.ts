/**
 * Background responses running in this process: each has an AbortController so that
 * `POST /v1/responses/{id}/cancel` can stop it while it waits or before it stores its result.
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
    controller?.abort();
    return controller !== undefined;
  }

  /** Waits for every running job to finish (shutdown, tests). */
  async drain(): Promise<void> {
    while (this.#running.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
