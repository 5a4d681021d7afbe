const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/**
 * The property names under which a tool appears on `tools`: its own name, plus, when that is
 * not a JavaScript identifier, the name with every other character turned into `_` (and a `_`
 * in front if it would start with a digit). An alias never shadows another tool's real name.
 */
export function toolKeys(names: readonly string[]): Map<string, string[]> {
  const taken = new Set(names);
  const keys = new Map<string, string[]>();
  for (const name of names) {
    const own = [name];
    if (!IDENTIFIER.test(name)) {
      let alias = name.replace(/[^A-Za-z0-9_$]/g, '_');
      if (/^[0-9]/.test(alias)) alias = `_${alias}`;
      if (!taken.has(alias)) {
        taken.add(alias);
        own.push(alias);
      }
    }
    keys.set(name, own);
  }
  return keys;
}
