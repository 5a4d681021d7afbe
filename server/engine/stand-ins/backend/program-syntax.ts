/** The constructor of async functions: how the isolate compiles a program (runtime/guest-prelude.js). */
const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (body: string) => unknown;

/**
 * Why a program would end `syntax_error` in the isolate, or undefined when it parses. The
 * isolate compiles `new AsyncFunction('"use strict";' + code)`; compiling the same here runs
 * none of it (a constructed function is never called), and the engine is the same V8.
 */
export function programSyntaxError(code: string): string | undefined {
  try {
    new AsyncFunction(`"use strict";${code}`);
    return undefined;
  } catch (error) {
    return error instanceof SyntaxError ? `SyntaxError: ${error.message}` : String(error);
  }
}
