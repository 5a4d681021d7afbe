import { ApiError } from '../../platform/api-error.ts';

/**
 * The programs a request of this process is resuming right now. A request takes its program
 * before anything of the resume runs (approved MCP calls included), so a second request for the
 * same program gets `program_busy` having done nothing: no call runs twice, nothing unrecorded.
 * The runtime's own busy check stays behind this one.
 */
/** The 409 a request gets for a program another request is resuming: built here only. */
export function programBusy(programCallId: string): ApiError {
  return new ApiError('program_busy', `Program ${programCallId} is being resumed by another request; retry once it answers.`);
}

export class ProgramClaims {
  readonly #claimed = new Set<string>();

  /** Takes the program, or throws `program_busy`; the returned function gives it back. */
  claim(programCallId: string): () => void {
    if (this.#claimed.has(programCallId)) throw programBusy(programCallId);
    this.#claimed.add(programCallId);
    return () => {
      this.#claimed.delete(programCallId);
    };
  }
}
