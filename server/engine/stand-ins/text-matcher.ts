/** The regular expression a matcher written `/regex/flags` stands for; undefined for a substring. Throws when it does not compile. */
export function matcherRegex(matcher: string): RegExp | undefined {
  const regex = /^\/(.*)\/([a-z]*)$/s.exec(matcher);
  return regex ? new RegExp(regex[1]!, regex[2]) : undefined;
}

/** A scenario's text matcher: `/regex/flags`, or a case-insensitive substring. */
export function textMatches(matcher: string, text: string): boolean {
  const regex = matcherRegex(matcher);
  if (regex) return regex.test(text);
  return text.toLowerCase().includes(matcher.toLowerCase());
}
