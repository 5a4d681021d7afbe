import { EmulatorError } from '../../runtime/index.ts';

/**
 * Why a turn under way was stopped, as the reason of its AbortSignal: a background response
 * cancelled, an Agents API turn cancelled or its session deleted, or the server shutting down.
 * What catches the abort recognises it by this type (or as the cause of an AbortError a timer
 * threw for it), never by a name string.
 */
export class TurnStopped extends EmulatorError {
  override readonly name = 'TurnStopped';
  readonly code = 'PTC_ERR_TURN_STOPPED';
  constructor(readonly why: 'cancelled' | 'shutdown') {
    super(why === 'cancelled' ? 'The turn was cancelled.' : 'The server is shutting down.');
  }
}

/** Whether an error is a turn's stop: the TurnStopped itself, or an AbortError a timer or fetch threw with it as its cause. */
export function stoppedBy(error: unknown): TurnStopped | undefined {
  if (error instanceof TurnStopped) return error;
  return error instanceof Error && error.cause instanceof TurnStopped ? error.cause : undefined;
}
