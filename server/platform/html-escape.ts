/** Text for HTML, every character that could open markup or end an attribute escaped: reports show what programs, tools and files wrote. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.charCodeAt(0)};`);
}
