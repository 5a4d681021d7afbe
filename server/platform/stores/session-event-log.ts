/**
 * What a follower of a session's events is handed: the events of one append, in the order the
 * appends were made, whichever instance made them.
 */
export interface SessionEventDelivery {
  /** The events of one append, as they were given (JSON values); none for a mark alone. */
  readonly events: readonly unknown[];
  /**
   * The follower may have missed events before these (an append failed, or this instance fell
   * further behind than the log keeps): what it shows of the session can no longer be trusted.
   */
  readonly gap: boolean;
  /** Nothing more will be appended (the session was deleted). */
  readonly end: boolean;
}

/**
 * The live events of agent sessions, shared by the instances of one store (Redis): what one
 * instance appends, every instance's followers of the session are handed, in one order. Absent
 * from a store: the server delivers them in its own process (one process owns the store).
 */
export interface SessionEventLog {
  /**
   * Appends one batch of a session's events. Returns at once: appends are sent in call order
   * and never reordered; one that fails reaches every follower of the session as a gap (at once
   * on this instance, on the others once the store answers again) and is reported.
   */
  append(sessionId: string, events: readonly unknown[]): void;
  /** Appends the session's end, after whatever was appended before it: its followers are told. */
  end(sessionId: string): void;
  /**
   * Follows a session from the log's end now: `deliver` is handed every append made after this
   * resolves (and any made while it was setting up), in order. Resolves with the function that
   * stops following; rejects with StoreUnavailableError when the store cannot be read.
   */
  follow(sessionId: string, deliver: (delivery: SessionEventDelivery) => void): Promise<() => void>;
  /** Where trouble is told (an append that failed, reads failing and recovering); one listener. */
  onTrouble(listener: (message: string, error?: unknown) => void): void;
  /** Stops reading (ending the blocked read at once) and sending; the store closes after. */
  close(): Promise<void>;
}
