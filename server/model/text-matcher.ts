/** A scenario's text matcher: `/regex/flags`, or a case-insensitive substring. */
export function textMatches(matcher: string, text: string): boolean {
  const regex = /^\/(.*)\/([a-z]*)$/s.exec(matcher);
  if (regex) return new RegExp(regex[1]!, regex[2]).test(text);
  return text.toLowerCase().includes(matcher.toLowerCase());
}
