/**
 * What the recorder has seen of each conversation, by response id: the items before the
 * response and its output. A request that continues one with `previous_response_id` sends only
 * its new input; the key of its decisions needs the whole conversation, which the upstream
 * keeps and this remembers (in memory, for the recorder's life).
 */
export class ConversationMemory {
  readonly #responses = new Map<string, { readonly before: readonly unknown[]; readonly output: readonly unknown[] }>();
  readonly #capacity: number;

  constructor(capacity = 10_000) {
    this.#capacity = capacity;
  }

  remember(responseId: string, before: readonly unknown[], output: readonly unknown[]): void {
    this.#responses.delete(responseId);
    this.#responses.set(responseId, { before, output });
    // The oldest go first: a recording session rarely continues a response that old.
    while (this.#responses.size > this.#capacity) this.#responses.delete(this.#responses.keys().next().value!);
  }

  /** The conversation up to and including a response's output, or undefined when it was never seen. */
  through(responseId: string): readonly unknown[] | undefined {
    const seen = this.#responses.get(responseId);
    return seen && [...seen.before, ...seen.output];
  }
}
