/**
 * The user's message as the autopilot reads it: its tokens (what a value can be taken from),
 * its quoted phrases and code spans, and its content words (what tools are matched against).
 * Only the first AUTOPILOT_TEXT_CHARS characters are read: the work stays bounded whatever the
 * message's size.
 */

/** How much of the last user message the autopilot reads. */
export const AUTOPILOT_TEXT_CHARS = 16_384;

export interface MessageText {
  /** The message, cut to AUTOPILOT_TEXT_CHARS. */
  readonly text: string;
  /** Whitespace-separated tokens, surrounding punctuation stripped, in order. */
  readonly tokens: readonly string[];
  /** Phrases in quotes ("…", '…', “…”), in order. */
  readonly quoted: readonly string[];
  /** `code spans`, in order. */
  readonly code: readonly string[];
  /** Content words, lower-cased and stemmed (stopwords left out). */
  readonly words: ReadonlySet<string>;
  /** Every word, lower-cased, as written (verbs such as "fetch" and "list" included). */
  readonly allWords: ReadonlySet<string>;
}

/** Words too common to say what a message or a tool is about. */
const STOPWORDS = new Set(
  (
    'a an and are as at be but by can could do does for from get give has have how i if in into is it its me my of on or our please ' +
    'should show so than that the their them then there these this those to us was we what when where which who why will with would ' +
    'you your all any each every some tell find fetch list return returns object string number integer boolean value values array ' +
    'field fields using use call tool tools run set make let lets one two also about now just'
  ).split(' '),
);

/** Punctuation a token may be wrapped in, which is not part of it. */
const WRAPPING = /^[\s"'“”‘’`([{<,;!?]+|[\s"'“”‘’`)\]}>,;!?.:]+$/g;

/** Splits `get_inventory`, `getInventory` and `get-inventory` into `get`, `inventory`. */
export function nameParts(name: string): string[] {
  return name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z0-9]+/)
    .map((part) => part.toLowerCase())
    .filter((part) => part.length > 0);
}

/** A light stem: plurals and `-ing`/`-ed` endings folded, so that "orders" meets "order". */
export function stem(word: string): string {
  if (word.length > 4 && word.endsWith('ies')) return `${word.slice(0, -3)}y`;
  if (word.length > 5 && word.endsWith('ing')) return word.slice(0, -3);
  if (word.length > 4 && word.endsWith('ed')) return word.slice(0, -2);
  if (word.length > 3 && word.endsWith('s') && !word.endsWith('ss')) return word.slice(0, -1);
  return word;
}

/** The content words of a text: lower-cased, stemmed, without stopwords or one-letter words. */
export function contentWords(text: string): Set<string> {
  const words = new Set<string>();
  for (const part of nameParts(text)) {
    if (part.length < 2 || STOPWORDS.has(part) || /^\d+$/.test(part)) continue;
    words.add(stem(part));
  }
  return words;
}

export function readMessage(message: string): MessageText {
  const text = message.slice(0, AUTOPILOT_TEXT_CHARS);
  const tokens = text
    .split(/\s+/)
    .map((token) => token.replace(WRAPPING, ''))
    .filter((token) => token.length > 0);
  const quoted = [...text.matchAll(/"([^"\n]{1,500})"|“([^”\n]{1,500})”|(?<![A-Za-z])'([^'\n]{1,500})'(?![A-Za-z])/g)].map(
    (match) => match[1] ?? match[2] ?? match[3]!,
  );
  const code = [...text.matchAll(/`([^`\n]{1,500})`/g)].map((match) => match[1]!);
  return { text, tokens, quoted, code, words: contentWords(text), allWords: new Set(nameParts(text)) };
}
