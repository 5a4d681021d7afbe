import { createHash } from 'node:crypto';
import fc from 'fast-check';

/**
 * Generated PTC programs for property tests: sequential and parallel calls, loops, branches on
 * call results, calls left running across an await, Math.random and Date. Every program pushes
 * what it sees into `s` and prints it, so any difference between two runs shows in the result.
 */
export const STRING_TOOLS = ['alpha', 'beta', 'gamma'] as const;
export const JSON_TOOL = 'delta';

const tool = fc.constantFrom(...STRING_TOOLS, JSON_TOOL);
const argument = fc.oneof(fc.integer({ min: 0, max: 9 }).map(String), fc.constant('s.length'), fc.constant('String(s.at(-1)).length'));

function call(name: string, arg: string): string {
  const value = name === JSON_TOOL ? `(await tools.${name}({k: ${arg}})).v` : `await tools.${name}({k: ${arg}})`;
  return `s.push(${value});`;
}

const statement: fc.Memo<string> = fc.memo((depth) =>
  fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.tuple(tool, argument).map(([name, arg]) => call(name, arg)),
    fc
      .array(fc.tuple(tool, argument), { minLength: 2, maxLength: 4 })
      .map(
        (calls) =>
          `s.push(...(await Promise.all([${calls.map(([name, arg]) => `tools.${name}({k: ${arg}})`).join(', ')}])).map((r) => typeof r === 'object' ? r.v : r));`,
      ),
    fc
      .tuple(tool, tool)
      .map(
        ([first, second]) =>
          `{ const p = tools.${first}({k: 'early'}); await null; s.push(await tools.${second}({k: 'late'})); s.push(JSON.stringify(await p)); }`,
      ),
    fc.constant('s.push(Math.floor(Math.random() * 1000));'),
    fc.constant('s.push(Date.now() % 100000, new Date().getUTCMinutes());'),
    depth > 1
      ? fc.tuple(fc.integer({ min: 1, max: 3 }), statement(depth - 1)).map(([times, body]) => `for (let i = 0; i < ${times}; i++) { ${body} }`)
      : fc.constant('s.push("leaf");'),
    depth > 1
      ? fc.tuple(statement(depth - 1), statement(depth - 1)).map(([yes, no]) => `if (String(s.at(-1)).length % 2 === 0) { ${yes} } else { ${no} }`)
      : fc.constant('s.push("flat");'),
  ),
);

export const generatedProgram: fc.Arbitrary<string> = fc
  .array(statement(3), { minLength: 1, maxLength: 6 })
  .map((statements) => `const s = [];\n${statements.join('\n')}\ntext(s);`);

/** The client's answer to a call: a pure function of the call, varied enough to take both branches. */
export function answer(tool: string, argumentsJson: string): string {
  const hash = createHash('sha256').update(`${tool}:${argumentsJson}`).digest('hex');
  return tool === JSON_TOOL ? JSON.stringify({ v: parseInt(hash.slice(0, 4), 16) }) : hash.slice(0, 1 + (parseInt(hash[0]!, 16) % 6));
}
