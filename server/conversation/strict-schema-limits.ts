/**
 * The hosted API's limits on a strict schema (Structured Outputs, "Supported schemas"): a
 * function's strict `parameters` past any of them is a 400 there, and here. The emulator applies
 * them to `output_schema` too. Checked by one walk of the schema, linear in its size, before ajv
 * sees it: ajv's cost grows faster than a schema where these limits bound it (60,000 enum values
 * take it seconds; 2,000 patternProperties 3.8 s), and within them it grows with the schema's
 * keywords (5,000 plain properties: 0.6 s here), which PTC_MAX_SCHEMA_BYTES and the deadline bound.
 */
export const STRICT_SCHEMA_LIMITS = {
  /** Levels of `properties` (or `items`) within `properties` (or `items`). */
  nestingLevels: 10,
  /** Entries of every `properties` and `patternProperties` in the schema, together. */
  objectProperties: 5_000,
  /**
   * Entries of every `patternProperties`, together: the emulator's own limit (the hosted API
   * has no `patternProperties` in strict mode), as ajv's cost grows with their cube (1,000
   * patterns: 0.36 s, 2,000: 3.8 s).
   */
  patternProperties: 500,
  /** Entries of every `enum` in the schema, together. */
  enumValues: 1_000,
  /** Characters of every property name, definition name, enum value and const value, together. */
  nameAndValueChars: 120_000,
  /** A string enum of more than this many values... */
  largeStringEnumValues: 250,
  /** ...has at most this many characters of values. */
  largeStringEnumChars: 15_000,
} as const;

const L = STRICT_SCHEMA_LIMITS;

/** Keywords whose value is data, not a schema: an object in them is never walked as one. */
const DATA_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);
/** Keywords whose value maps property names (or patterns) to the schemas of those properties. */
const PROPERTY_MAPS = new Set(['properties', 'patternProperties']);
/** Keywords whose value maps definition names to schemas. */
const DEFINITION_MAPS = new Set(['$defs', 'definitions']);
/** Keywords whose schemas describe what an array or object holds: one level deeper. */
const CONTENT_KEYWORDS = new Set(['items', 'prefixItems', 'additionalItems', 'contains', 'additionalProperties', 'unevaluatedItems', 'unevaluatedProperties']);

/** Characters an enum or const value counts for: a string's own, anything else's JSON. */
function charsOf(value: unknown): number {
  return typeof value === 'string' ? value.length : (JSON.stringify(value) ?? '').length;
}

/** `/properties/a/items` for the keys from the root; `the root` for none. */
function pointerOf(path: readonly string[]): string {
  return path.length === 0 ? 'the root' : `/${path.map((key) => key.replace(/~/g, '~0').replace(/\//g, '~1')).join('/')}`;
}

interface Node {
  readonly schema: unknown;
  readonly depth: number;
  readonly path: readonly string[];
}

/**
 * The first of the hosted API's strict-schema limits that `schema` is past, as a sentence
 * naming it and where; undefined when it is within them all. Iterative (a deep schema cannot
 * overflow the stack), each part of the schema visited once.
 */
export function strictSchemaLimitExceeded(schema: unknown): string | undefined {
  let properties = 0;
  let patterns = 0;
  let enumValues = 0;
  let chars = 0;
  const stack: Node[] = [{ schema, depth: 0, path: [] }];
  const visit = (child: unknown, depth: number, path: readonly string[]): void => {
    if (child !== null && typeof child === 'object') stack.push({ schema: child, depth, path });
  };
  while (stack.length > 0) {
    const { schema: node, depth, path } = stack.pop()!;
    if (depth > L.nestingLevels) return `it nests more than ${L.nestingLevels} levels deep (the limit), ${depth} at ${pointerOf(path)}`;
    if (Array.isArray(node)) {
      node.forEach((child, index) => visit(child, depth, [...path, String(index)]));
      continue;
    }
    for (const [keyword, value] of Object.entries(node as Record<string, unknown>)) {
      const at = [...path, keyword];
      if (keyword === 'enum' && Array.isArray(value)) {
        enumValues += value.length;
        if (enumValues > L.enumValues) return `it has more than ${L.enumValues} enum values in total (the limit), ${enumValues} by ${pointerOf(at)}`;
        const valueChars = value.reduce((sum: number, entry) => sum + charsOf(entry), 0);
        chars += valueChars;
        if (value.length > L.largeStringEnumValues && value.every((entry) => typeof entry === 'string') && valueChars > L.largeStringEnumChars) {
          return `the string enum at ${pointerOf(at)} has ${value.length} values of ${valueChars} characters in all, over the limit of ${L.largeStringEnumChars} characters for an enum of more than ${L.largeStringEnumValues} values`;
        }
      } else if (keyword === 'const') {
        chars += charsOf(value);
      } else if (DATA_KEYWORDS.has(keyword)) {
        continue;
      } else if ((PROPERTY_MAPS.has(keyword) || DEFINITION_MAPS.has(keyword)) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
        const names = Object.keys(value);
        for (const name of names) chars += name.length;
        if (PROPERTY_MAPS.has(keyword)) {
          properties += names.length;
          if (properties > L.objectProperties) return `it has more than ${L.objectProperties} object properties in total (the limit), ${properties} by ${pointerOf(at)}`;
        }
        if (keyword === 'patternProperties') {
          patterns += names.length;
          if (patterns > L.patternProperties) return `it has more than ${L.patternProperties} patternProperties in total (the emulator's limit), ${patterns} by ${pointerOf(at)}`;
        }
        // A definition's depth is where it is used, which a walk without following `$ref` cannot know: it counts from the root.
        const childDepth = PROPERTY_MAPS.has(keyword) ? depth + 1 : 0;
        for (const name of names) visit((value as Record<string, unknown>)[name], childDepth, [...at, name]);
      } else {
        // Any other object or array may hold schemas (`anyOf`, `not`, `if`, a keyword ajv does not know): walked, so nothing is hidden from the counts.
        visit(value, CONTENT_KEYWORDS.has(keyword) ? depth + 1 : depth, at);
      }
      if (chars > L.nameAndValueChars) {
        return `its property names, definition names, enum values and const values come to more than ${L.nameAndValueChars} characters (the limit), ${chars} by ${pointerOf(at)}`;
      }
    }
  }
  return undefined;
}
