/**
 * What was worked out from texts (a token count, a hash), kept for texts that come back: the
 * same tool list, schemas and conversation arrive with every request, as new strings equal to
 * the old. Looking a text up costs V8 one pass over it to hash it, far less than most work done
 * with it. Bounded by entries and by characters held; the least recently used goes first.
 */
export class TextMemo<V> {
  readonly #known = new Map<string, V>();
  readonly #maxEntries: number;
  readonly #maxChars: number;
  #chars = 0;

  constructor(maxEntries: number, maxChars: number) {
    this.#maxEntries = maxEntries;
    this.#maxChars = maxChars;
  }

  /** The value kept for `text`, now the most recently used; undefined when none is. */
  get(text: string): V | undefined {
    const known = this.#known.get(text);
    if (known === undefined) return undefined;
    this.#known.delete(text);
    this.#known.set(text, known);
    return known;
  }

  /** The value kept for `text` (undefined when none is), without making it the most recently used. */
  peek(text: string): V | undefined {
    return this.#known.get(text);
  }

  /** Keeps `value` for `text` (unless the text alone is past the bound of characters), and returns it. */
  set(text: string, value: V): V {
    if (text.length > this.#maxChars || this.#known.has(text)) return value;
    while (this.#known.size >= this.#maxEntries || this.#chars + text.length > this.#maxChars) {
      const oldest = this.#known.keys().next().value!;
      this.#known.delete(oldest);
      this.#chars -= oldest.length;
    }
    this.#known.set(text, value);
    this.#chars += text.length;
    return value;
  }
}
