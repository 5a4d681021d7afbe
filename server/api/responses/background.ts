import { setTimeout as sleep } from 'node:timers/promises';
import type { ResponseObject } from '../../../schemas/response.ts';
import { ApiError, type ResponseError } from '../../platform/api-error.ts';
import { finishResponse, releasePrepared, type PreparedResponse, type RespondDeps } from '../../engine/conversation/respond.ts';
import { standInJournal, type JournalDetails } from '../../engine/journal-details.ts';
import type { JournalRecorder } from '../journal/journal-hooks.ts';
import { buildResponse } from '../../engine/response-object.ts';
import { storedOrNotFound } from '../../engine/stored-response.ts';
import { stoppedBy, TurnStopped } from '../../platform/turn-stopped.ts';
import { putIfUnfinished, UNFINISHED_STATUSES, type ResponseStore, type StoredResponse } from '../../platform/stores/response-store.ts';
import type { WebhookSender } from '../../platform/webhooks/webhook-sender.ts';

/** How often a request waiting for a background response to finish reads it again. */
const POLL_MS = 25;

export interface BackgroundDeps {
  readonly store: ResponseStore;
  readonly respond: RespondDeps;
  readonly recordBackground: JournalRecorder['recordBackground'];
  /** Sends each background response's outcome as a webhook (`response.completed`, …). */
  readonly webhooks: WebhookSender;
}

/** The webhook that tells of a background response that ended so. */
const WEBHOOK_OF_STATUS = {
  completed: 'response.completed',
  incomplete: 'response.incomplete',
  failed: 'response.failed',
  cancelled: 'response.cancelled',
} as const;

/** A failure as a failed Response carries it: `Response.error.code` has a fixed set of values. */
function responseError(error: unknown): ResponseError {
  if (error instanceof ApiError) return error.toResponseError();
  return { code: 'server_error', message: 'The emulator failed while running this background response.' };
}

/**
 * The lifecycle of `background: true` responses, all of it: stored queued, run detached once
 * the turn gate gives them a place, stored in progress, then completed (or incomplete), failed
 * or cancelled, each outcome journaled as an entry of its own. Each running job has an
 * AbortController so that `POST /v1/responses/{id}/cancel` can stop it while it waits or before
 * it stores its result, and so that shutting down stops them all rather than waiting on them.
 */
export class BackgroundResponses {
  readonly #deps: BackgroundDeps;
  readonly #running = new Map<string, AbortController>();
  /** Set once the server closes: waits for responses end rather than hold the close up. */
  #closing = false;

  constructor(deps: BackgroundDeps) {
    this.#deps = deps;
  }

  /** Stores a prepared (checked) request queued and leaves its turn to a job that waits for `place`; returns the queued response. */
  async accept(prepared: PreparedResponse, place: Promise<() => void>): Promise<ResponseObject> {
    const { id, body, createdAt, newInput } = prepared.request;
    const queued = buildResponse(id, body, createdAt, { status: 'queued' });
    try {
      await this.#deps.store.put({ response: queued, inputItems: newInput });
    } catch (error) {
      await releasePrepared(prepared);
      throw error;
    }
    this.#run(prepared, place);
    return queued;
  }

  /**
   * The stored response once it has finished (a background one may still be running), or
   * undefined if `clientGone()` says the client waiting for it hung up meanwhile.
   */
  async finished(id: string, clientGone: () => boolean): Promise<ResponseObject | undefined> {
    for (;;) {
      const { response } = await storedOrNotFound(this.#deps.store, id);
      if (!UNFINISHED_STATUSES.has(response.status)) return response;
      if (clientGone()) return undefined;
      // The server is closing and this process is not running it (another instance is, sharing
      // the store): it may run on long after this process is gone. A job of this process was
      // stopped (closing()), and its failure is stored in a moment.
      if (this.#closing && !this.#running.has(id)) {
        // Read again: a job of this process forgets itself only once its outcome is stored.
        const { response: now } = await storedOrNotFound(this.#deps.store, id);
        if (!UNFINISHED_STATUSES.has(now.status)) return now;
        throw new ApiError(
          'shutting_down',
          `The server is shutting down while background response '${id}' is still ${now.status}; retry on another instance or after it restarts.`,
          null,
          { 'retry-after': '1' },
        );
      }
      await sleep(POLL_MS);
    }
  }

  /**
   * The server is closing: each running job is stopped (its failure stored, as stopAll() does),
   * and the requests waiting for a response to finish (stream: true) stop waiting, so that they
   * do not hold the close up until its deadline.
   */
  closing(): void {
    this.#closing = true;
    for (const controller of this.#running.values()) controller.abort(new TurnStopped('shutdown'));
  }

  /** Cancels a background response that has not finished yet; returns the response as it now stands. */
  async cancel({ response, inputItems }: StoredResponse): Promise<ResponseObject> {
    if (!UNFINISHED_STATUSES.has(response.status)) return response;
    // Stop the job first, so that it cannot store its result over the cancellation.
    this.#running.get(response.id)?.abort(new TurnStopped('cancelled'));
    const cancelled: ResponseObject = { ...response, status: 'cancelled', completed_at: Math.floor(Date.now() / 1000) };
    // Only over an unfinished response: one that finished meanwhile (on another instance) stays as it finished.
    if (!(await putIfUnfinished(this.#deps.store, { response: cancelled, inputItems })))
      return (await storedOrNotFound(this.#deps.store, response.id)).response;
    this.#deps.webhooks.send('response.cancelled', { id: response.id });
    return cancelled;
  }

  /** Stops every running job and waits until each has recorded how it ended. */
  async stopAll(): Promise<void> {
    for (const controller of this.#running.values()) controller.abort(new TurnStopped('shutdown'));
    while (this.#running.size > 0) await new Promise((resolve) => setTimeout(resolve, 10));
  }

  /** Runs a prepared background response: queued (through any delay and a wait for a place), in progress, then finished, failed or cancelled. */
  #run(prepared: PreparedResponse, place: Promise<() => void>): void {
    const { store, respond, recordBackground, webhooks } = this.#deps;
    const { id, body, createdAt, newInput, log } = prepared.request;
    const putUnfinished = (response: ResponseObject) => putIfUnfinished(store, { response, inputItems: newInput });
    const journal = (status: number, details: JournalDetails) =>
      recordBackground({ requestId: id, status, background: true, model: body.model, store: true, ...details });
    this.#detach(
      id,
      async (signal) => {
        // Cancelled or stopped, it lets its conversation go at once, not when it gets a place.
        signal.addEventListener('abort', () => void releasePrepared(prepared), { once: true });
        const release = await place;
        try {
          const { response, knobs, turn } = await finishResponse(prepared, respond, {
            signal,
            onStart: async () => {
              // Cancelled before it began (on another instance, say): it does not begin.
              if (!(await putUnfinished(buildResponse(id, body, createdAt, { status: 'in_progress' })))) throw new TurnStopped('cancelled');
            },
            storeIfUnfinished: true,
          });
          if (response.status === 'completed' || response.status === 'incomplete') webhooks.send(WEBHOOK_OF_STATUS[response.status], { id });
          journal(200, {
            response_id: id,
            response_status: response.status,
            output: response.output.map((item) => item.type),
            programs: turn.trace,
            stand_in: standInJournal(turn),
            knobs,
            client_loop: { tolerated: turn.tolerated },
          });
        } catch (error) {
          // Cancelled (here, or on another instance, which the store said): cancel() has stored the cancelled response.
          const stopped = signal.aborted ? stoppedBy(signal.reason) : stoppedBy(error);
          if (stopped?.why === 'cancelled') {
            journal(200, { response_id: id, response_status: 'cancelled' });
            return;
          }
          const failure: ResponseError =
            stopped?.why === 'shutdown'
              ? { code: 'server_error', message: 'The server shut down before this background response finished.' }
              : responseError(error);
          log.warn({ err: error, response: id }, 'background response failed');
          // Unless it was cancelled meanwhile (the cancellation stands).
          if (await putUnfinished(buildResponse(id, body, createdAt, { status: 'failed', error: failure }))) webhooks.send(WEBHOOK_OF_STATUS.failed, { id });
          journal(500, {
            response_id: id,
            response_status: 'failed',
            error: { code: failure.code, type: 'server_error', message: failure.message, param: null },
          });
        } finally {
          release();
        }
      },
      (error) => log.error({ err: error, response: id }, 'background response could not record its outcome'),
    );
  }

  /** Runs `job` detached; its errors are the job's to record, never unhandled. */
  #detach(id: string, job: (signal: AbortSignal) => Promise<void>, onError: (error: unknown) => void): void {
    const controller = new AbortController();
    this.#running.set(id, controller);
    void job(controller.signal)
      .catch(onError)
      .finally(() => this.#running.delete(id));
  }
}
