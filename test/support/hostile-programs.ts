import type { ProgramErrorCode } from '../../schemas/error-codes.ts';

/**
 * The containment corpus: hostile programs, each with the one outcome it must end with.
 *
 * Every program runs with the limits of `CONTAINMENT_LIMITS` and one tool, `echo`, whose
 * output the test client answers with the call's own arguments. Outcomes are exact: the
 * `program_output` status, and either the result of a completed program or the code (and,
 * where it is stable, the message) of an incomplete one.
 */

/** The limits every containment server runs with: small, so that bombs and loops end fast. */
export const CONTAINMENT_LIMITS = {
  stepWallTimeMs: 300,
  cpuTimeMs: 600,
  memoryMb: 32,
  maxCalls: 40,
  maxCallsInFlight: 16,
  maxArgumentBytes: 64 * 1024,
  maxOutputBytes: 64 * 1024,
} as const;

/**
 * The limits of the programs expected to end on the heap limit, on the array buffer allocator's
 * refusal or by killing the process that runs them: the same, with time limits far out of reach. Reaching the heap limit can take isolated-vm most of a second of wall time (its
 * last-resort collections; a flattened 16 MiB string, measured here: 0.9–1.7 s, 3 ms of it the
 * isolate's CPU), so within the 300 ms step those programs raced the wall-clock ceiling; a
 * process killer filling a 2 ** 27 array took over a second to abort its process beside two CPU
 * burners. The allocator's refusal comes after V8's own last-resort collections: on Node 24,
 * 64 KiB buffers took 30–250 ms of CPU to be refused (in one process, beside two CPU burners).
 */
export const MEMORY_BOUND_LIMITS = { ...CONTAINMENT_LIMITS, stepWallTimeMs: 20_000, cpuTimeMs: 40_000 } as const;

/**
 * The limits of the programs expected to end otherwise than on a step's wall clock (their result,
 * a throw, the CPU budget): the same, with that ceiling out of reach. A step's wall time is what
 * the isolate took, waiting for a core included: on a loaded machine a light step, or one of a
 * program burning its CPU budget a little at a time, can take five or ten times its CPU, and
 * within 300 ms would end on the wall clock rather than as it must.
 */
export const UNHURRIED_LIMITS = { ...CONTAINMENT_LIMITS, stepWallTimeMs: 30_000 } as const;

/** True for a program expected to end on a step's wall-clock ceiling (run with CONTAINMENT_LIMITS). */
export function endsOnWallClock(program: HostileProgram): boolean {
  return program.outcome.status === 'incomplete' && program.outcome.code === 'wall_time_exceeded';
}

/**
 * True for a program expected to end on the heap limit, the array buffer allocator's refusal or
 * a crash (run with MEMORY_BOUND_LIMITS).
 */
export function endsOnMemory(program: HostileProgram): boolean {
  const { outcome } = program;
  if (outcome.status !== 'incomplete') return false;
  return (
    outcome.code === 'memory_limit_exceeded' ||
    outcome.code === 'runtime_crashed' ||
    (outcome.code === 'program_threw' && outcome.message?.startsWith('RangeError: Array buffer allocation failed') === true)
  );
}

export type ExpectedErrorCode = ProgramErrorCode;

export type ExpectedOutcome =
  | { readonly status: 'completed'; readonly result: string }
  | { readonly status: 'incomplete'; readonly code: ExpectedErrorCode; readonly message?: string };

export interface HostileProgram {
  /** What the program tries, as the test's title. */
  readonly name: string;
  readonly code: string;
  readonly outcome: ExpectedOutcome;
  /** The `arguments` of every function call the program made, in order, when that matters. */
  readonly calls?: readonly string[];
  /**
   * What the crash hunt found this program does to the process that runs its isolate with
   * isolated-vm 5.0.4 on Node 20, as measured again with isolated-vm 7.0.1 on Node 24 (V8 13),
   * whatever the limits: `crash` aborts the process (SIGABRT,
   * SIGTRAP); `wedge` keeps the isolate's thread running past every timeout, so the step never
   * ends; `escape` takes memory that `memoryLimit` does not count. Such programs run only
   * against a server in a child process, one server each.
   */
  readonly harm?: 'crash' | 'wedge' | 'escape';
}

const completed = (result: string): ExpectedOutcome => ({ status: 'completed', result });
const incomplete = (code: ExpectedErrorCode, message?: string): ExpectedOutcome =>
  message === undefined ? { status: 'incomplete', code } : { status: 'incomplete', code, message };

const WALL = incomplete('wall_time_exceeded', `One execution step ran longer than ${CONTAINMENT_LIMITS.stepWallTimeMs} ms`);
const CPU = incomplete('cpu_time_exceeded', `The program used more than ${CONTAINMENT_LIMITS.cpuTimeMs} ms of CPU`);
const MEMORY = incomplete('memory_limit_exceeded', `The program's heap exceeded ${CONTAINMENT_LIMITS.memoryMb} MiB`);
/** A heap limit reached in a call that goes on after its isolate is disposed: the supervisor stops its worker. */
const NATIVE_MEMORY = incomplete(
  'memory_limit_exceeded',
  `The program's heap reached its limit of ${CONTAINMENT_LIMITS.memoryMb} MiB in a native call that did not stop with its isolate; the worker running it was stopped`,
);
const STALLED = incomplete('program_stalled', 'The program is waiting on a promise that nothing can settle: no tool call is pending');
const IN_FLIGHT = incomplete('calls_in_flight_exceeded', `More than ${CONTAINMENT_LIMITS.maxCallsInFlight} tool calls pending at once`);
const CALLS = incomplete('call_limit_exceeded', `The program made more than ${CONTAINMENT_LIMITS.maxCalls} tool calls`);
const OUTPUT = incomplete('output_limit_exceeded', `Program output exceeds ${CONTAINMENT_LIMITS.maxOutputBytes} bytes`);
const ARGUMENTS = incomplete('arguments_too_large', `Arguments of tools.echo exceed ${CONTAINMENT_LIMITS.maxArgumentBytes} bytes`);
const threw = (message: string): ExpectedOutcome => incomplete('program_threw', message);

/** Names a program would use to reach its host; none may exist. */
const HOST_NAMES =
  "['process', 'require', 'module', 'exports', 'Buffer', 'global', 'ivm', '_ivm', 'isolatedVm', 'console', 'fetch', 'setTimeout', 'setImmediate', 'queueMicrotask', 'performance', 'WebAssembly', 'SharedArrayBuffer', 'Atomics', 'structuredClone', 'postMessage', 'Deno', 'Bun']";

/**
 * Word segmentation of a long Thai text runs in ICU, which isolated-vm's timeout cannot
 * interrupt: it fills a 64 MiB heap and goes on after its isolate is disposed for it. Node 24's
 * ICU is faster and leaner than Node 20's: 200,000 repeats now finish in 0.5 s within 48 MB, so
 * 2,000,000 are used (in a bare 64 MiB isolate: disposed at 1.6 s, the call returned at 4.2 s).
 */
export const ICU_RUNAWAY = "const thai = 'สวัสดีครับ'.repeat(2000000); text(String([...new Intl.Segmenter('th', { granularity: 'word' }).segment(thai)].length))";

export const HOSTILE_PROGRAMS: readonly HostileProgram[] = [
  // ---- constructor chains to the host ------------------------------------------------------
  {
    name: 'this.constructor.constructor("return process")()',
    code: "const p = this.constructor.constructor('return process')(); text(typeof p)",
    outcome: threw("TypeError: Cannot read properties of undefined (reading 'constructor') (line 1, column 16)"),
  },
  {
    name: 'text.constructor.constructor builds a Function in the isolate, not the host',
    code: `const F = text.constructor.constructor; text(F('return ' + ${JSON.stringify(HOST_NAMES)} + '.filter((n) => typeof globalThis[n] !== "undefined").join() || "none"')())`,
    outcome: completed('none'),
  },
  {
    name: 'tools.echo.constructor("return process")()',
    code: "const F = tools.echo.constructor; text(F === Function); try { F('return process')() } catch (e) { text(' ' + e.name + ': ' + e.message) }",
    outcome: completed('true ReferenceError: process is not defined'),
  },
  {
    name: "Function('return this')() is the isolate's global, without host names",
    code: `const g = Function('return this')(); text(${HOST_NAMES}.filter((n) => n in g).join() || 'none'); text(' ' + (g === globalThis))`,
    outcome: completed('none true'),
  },
  {
    name: '(async () => {}).constructor and generator constructors',
    code: "const AF = (async () => {}).constructor; const GF = (function* () {}).constructor; const AGF = (async function* () {}).constructor; text([await AF('return typeof process')(), GF('yield typeof require')().next().value, (await AGF('yield typeof Buffer')().next()).value].join())",
    outcome: completed('undefined,undefined,undefined'),
  },
  {
    name: "indirect eval('this') and eval of host names",
    code: "const g = (0, eval)('this'); text([typeof g.process, eval('typeof require'), new Function('return typeof module')()].join())",
    outcome: completed('undefined,undefined,undefined'),
  },
  {
    name: "import('node:child_process') is refused",
    code: "await import('node:child_process')",
    outcome: threw('Error: Not supported (line 1, column 1)'),
  },
  {
    name: 'import() of a data: URL, caught',
    code: "try { await import('data:text/javascript,export default globalThis.process') } catch (e) { text(e.message) }",
    outcome: completed('Not supported'),
  },
  {
    name: 'an import declaration',
    code: "import fs from 'node:fs'; text(fs)",
    outcome: incomplete('syntax_error', 'SyntaxError: Cannot use import statement outside a module'),
  },
  {
    name: 'breaking out of a wrapper with "})"',
    code: '}); globalThis.process.exit(1); (async () => {',
    outcome: incomplete('syntax_error', 'SyntaxError: Single function literal required'),
  },
  {
    name: 'Error().stack names no host file',
    code: "text(new Error('probe').stack.replace(/ptc:prelude:\\d+:\\d+/g, 'ptc:prelude'))",
    outcome: completed('Error: probe\n    at eval (eval at start (ptc:prelude), <anonymous>:3:19)\n    at start (ptc:prelude)\n    at dispatch (ptc:prelude)'),
  },
  {
    name: 'CallSite objects from Error.prepareStackTrace expose no host function or receiver',
    code: "Error.prepareStackTrace = (_, frames) => frames.map((f) => [f.getFileName(), typeof f.getThis(), typeof f.getFunction(), f.isNative()].join(':')).join('|'); text(new Error('x').stack)",
    outcome: completed(':undefined:undefined:false|ptc:prelude:undefined:undefined:false|ptc:prelude:undefined:undefined:false'),
  },
  {
    name: 'a sloppy getter walks arguments.callee.caller from inside the bridge',
    code: "const o = {}; Object.defineProperty(o, 'a', { enumerable: true, get: Function('const c = arguments.callee.caller; return c === null ? \"null\" : typeof c') }); text(await tools.echo(o))",
    outcome: completed('{"a":"null"}'),
    calls: ['{"a":"null"}'],
  },
  {
    name: "the bridge's functions have no caller, arguments or prototype chain to the host",
    code: "const out = []; for (const f of [text, image, tools.echo]) { for (const k of ['caller', 'arguments']) { try { out.push(String(f[k])) } catch (e) { out.push(e.name) } } out.push(Object.getPrototypeOf(f) === Function.prototype) } text(out.join())",
    outcome: completed('TypeError,TypeError,true,TypeError,TypeError,true,TypeError,TypeError,true'),
  },

  // ---- Error.prepareStackTrace --------------------------------------------------------------
  {
    name: 'Error.prepareStackTrace loops forever, then the program throws',
    code: 'Error.prepareStackTrace = () => { for (;;) {} }; throw new Error("x")',
    outcome: WALL,
  },
  {
    name: 'Error.prepareStackTrace throws, then the program throws',
    code: 'Error.prepareStackTrace = () => { throw new Error("inner") }; throw new Error("outer")',
    outcome: threw('Uncaught value that cannot be described'),
  },
  {
    name: 'Error.prepareStackTrace returns CallSites, then the program makes tool calls',
    code: 'Error.prepareStackTrace = (_, frames) => frames; const r = await tools.echo({ a: 1 }); try { await tools.echo(1) } catch (e) { text(e.message) } text(" " + r)',
    outcome: completed('tools.echo expects an object of arguments, got a number {"a":1}'),
    calls: ['{"a":1}'],
  },
  {
    name: 'Error.prepareStackTrace makes tool calls while the outcome is described',
    code: 'Error.prepareStackTrace = () => { tools.echo({ from: "prepare" }); return "forged stack at /etc/passwd:1:1" }; await tools.echo({ first: 1 }); throw new Error("x")',
    outcome: threw('Error: x'),
    calls: ['{"first":1}'],
  },
  {
    name: 'Error.prepareStackTrace returns a huge string',
    code: 'Error.prepareStackTrace = () => "s".repeat(1e7); throw new Error("x")',
    outcome: threw('Error: x'),
  },

  // ---- Proxy and species tricks on values crossing the bridge ---------------------------------
  {
    name: 'a Proxy as tool arguments',
    code: "const p = new Proxy({}, { ownKeys: () => ['a', 'b'], getOwnPropertyDescriptor: () => ({ value: 0, enumerable: true, configurable: true }), get: (t, k) => (k === 'toJSON' ? undefined : 'spy:' + String(k)) }); text(await tools.echo(p))",
    outcome: completed('{"a":"spy:a","b":"spy:b"}'),
    calls: ['{"a":"spy:a","b":"spy:b"}'],
  },
  {
    name: 'a Proxy as tool arguments whose get trap throws',
    code: "await tools.echo(new Proxy({ a: 1 }, { get() { throw new Error('trap') } }))",
    outcome: threw('Error: trap (line 1, column 54)'),
  },
  {
    name: 'a Proxy as tool arguments whose ownKeys trap loops forever',
    code: 'await tools.echo(new Proxy({}, { ownKeys() { for (;;) {} } }))',
    outcome: WALL,
  },
  {
    name: 'a Proxy of an array, and a revoked Proxy, as tool arguments',
    code: "const out = []; try { await tools.echo(new Proxy([], {})) } catch (e) { out.push(e.message) } const r = Proxy.revocable({}, {}); r.revoke(); try { await tools.echo(r.proxy) } catch (e) { out.push(e.message) } text(out.join(' | '))",
    outcome: completed("tools.echo expects an object of arguments, got an array | Cannot perform 'IsArray' on a proxy that has been revoked"),
  },
  {
    name: 'an Array subclass with a hostile Symbol.species in tool arguments',
    code: "class Evil extends Array { static get [Symbol.species]() { throw new Error('species') } } const list = Evil.from([1, 2, 3]); text(await tools.echo({ list, n: list.length }))",
    outcome: completed('{"list":[1,2,3],"n":3}'),
    calls: ['{"list":[1,2,3],"n":3}'],
  },
  {
    name: 'Promise[Symbol.species] loops forever, and the runtime never consults it',
    code: "Object.defineProperty(Promise, Symbol.species, { get() { for (;;) {} } }); text('set')",
    outcome: completed('set'),
  },
  {
    name: 'Promise.prototype.constructor with a species that never calls its executor',
    code: "Promise.prototype.constructor = { [Symbol.species]: function Fake() {} }; text('set')",
    outcome: completed('set'),
  },
  {
    name: 'Promise[Symbol.species] throws',
    code: "Object.defineProperty(Promise, Symbol.species, { get() { throw new Error('species') } }); text('set')",
    outcome: completed('set'),
  },
  {
    name: 'a Proxy thrown as the error',
    code: "throw new Proxy(new Error('x'), {})",
    outcome: threw('Uncaught {}'),
  },
  {
    name: 'a Proxy thrown as the error whose traps loop forever',
    code: 'throw new Proxy({}, { get() { for (;;) {} } })',
    outcome: WALL,
  },
  {
    name: 'a Proxy thrown as the error, forging an Error',
    code: "throw new Proxy({}, { get(t, k) { return { [Symbol.toStringTag]: 'Error', name: 'Forged', message: 'by a proxy', stack: 'at /etc/passwd:1:1' }[k] } })",
    outcome: threw('Forged: by a proxy'),
  },

  // ---- getters and toJSON traps in tool arguments ---------------------------------------------
  {
    name: 'a getter in tool arguments that loops forever',
    code: 'await tools.echo({ get a() { for (;;) {} } })',
    outcome: WALL,
  },
  {
    name: 'a toJSON in tool arguments that throws',
    code: "await tools.echo({ toJSON() { throw new Error('nope') } })",
    outcome: threw('Error: nope (line 1, column 37)'),
  },
  {
    name: 'a getter in tool arguments that calls a tool',
    code: 'const args = { get a() { tools.echo({ inner: true }); return 1 } }; text(await tools.echo(args))',
    outcome: completed('{"a":1}'),
    calls: ['{"inner":true}', '{"a":1}'],
  },
  {
    name: 'a getter in tool arguments that calls tools recursively without end',
    code: 'const o = { get a() { return tools.echo(o) } }; await tools.echo(o)',
    outcome: IN_FLIGHT,
  },
  {
    name: 'a toJSON in tool arguments returning a huge string: arguments must be an object',
    code: "await tools.echo({ toJSON: () => 'x'.repeat(1e6) })",
    outcome: threw('TypeError: tools.echo: arguments must serialise to a JSON object (line 1, column 13)'),
  },
  {
    name: 'a toJSON in tool arguments returning an object with a huge string',
    code: "await tools.echo({ toJSON: () => ({ s: 'x'.repeat(1e6) }) })",
    outcome: ARGUMENTS,
  },
  {
    name: 'arguments changed after the call are not what was sent',
    code: 'const o = { a: 1 }; const p = tools.echo(o); o.a = 2; text(await p)',
    outcome: completed('{"a":1}'),
    calls: ['{"a":1}'],
  },
  {
    name: 'a toJSON in tool arguments returning an array: the arguments must still be an object',
    code: "try { await tools.echo({ toJSON: () => [1, 2] }); text('sent') } catch (e) { text(e.name) }",
    outcome: completed('TypeError'),
    calls: [],
  },
  {
    name: 'cyclic and BigInt arguments',
    code: 'const out = []; const o = {}; o.o = o; for (const a of [o, { n: 1n }]) { try { await tools.echo(a) } catch (e) { out.push(e.name) } } text(out.join())',
    outcome: completed('TypeError,TypeError'),
  },

  // ---- prototype pollution, then tool calls and text() ---------------------------------------
  {
    name: 'Object.prototype.toJSON, then tool calls and text()',
    code: "Object.prototype.toJSON = function () { return { polluted: true } }; const r = await tools.echo({ a: 1 }); text({ r }); text(' ' + r)",
    outcome: completed('{"polluted":true} {"polluted":true}'),
    calls: ['{"polluted":true}'],
  },
  {
    name: 'Array.prototype setter and getter at index 0, then tool calls and text()',
    code: "Object.defineProperty(Array.prototype, '0', { get() { return 'from-proto' }, set(v) { throw new Error('setter ran') }, configurable: true }); const r = await Promise.all([tools.echo({ list: [1, 2] }), tools.echo({ b: 2 })]); text(r.join(' ')); text(' ' + [, 1][0])",
    outcome: completed('{"list":[1,2]} {"b":2} from-proto'),
    calls: ['{"list":[1,2]}', '{"b":2}'],
  },
  {
    name: 'Object.prototype.then, then tool calls and text()',
    code: "Object.prototype.then = function (resolve) { resolve('hijacked') }; const r = await tools.echo({ a: 1 }); text(r); text(' ' + (await { x: 1 }))",
    outcome: completed('{"a":1} hijacked'),
    calls: ['{"a":1}'],
  },
  {
    name: 'Map.prototype.set/get/delete and Promise.prototype.then replaced, then tool calls',
    code: "Map.prototype.set = () => { throw new Error('set') }; Map.prototype.get = () => undefined; Map.prototype.delete = () => false; Promise.prototype.then = function () { throw new Error('then') }; const a = await tools.echo({ a: 1 }); const b = await tools.echo({ b: 2 }); text(a + b); try { await Promise.all([tools.echo({ c: 3 })]) } catch (e) { text(' ' + e.message) }",
    outcome: completed('{"a":1}{"b":2} then'),
    calls: ['{"a":1}', '{"b":2}'],
  },
  {
    name: 'Promise.prototype.then replaced after the calls were made',
    code: 'const p = tools.echo({ a: 1 }); Promise.prototype.then = function () { return this }; const r = await p; text(r)',
    outcome: completed('{"a":1}'),
    calls: ['{"a":1}'],
  },
  {
    name: 'JSON.parse and JSON.stringify replaced, then tool calls and text()',
    code: 'JSON.stringify = () => \'{"forged":true}\'; JSON.parse = () => ({ forged: true }); const r = await tools.echo({ a: 1 }); text({ r })',
    outcome: completed('{"r":"{\\"a\\":1}"}'),
    calls: ['{"a":1}'],
  },
  {
    name: 'Reflect.apply, Function.prototype.call/apply/bind and Object.defineProperty replaced',
    code: "Reflect.apply = () => { throw new Error('apply') }; Reflect.construct = () => { throw new Error('construct') }; Function.prototype.call = Function.prototype.apply = Function.prototype.bind = () => { throw new Error('fp') }; Object.defineProperty = () => { throw new Error('dp') }; const r = await tools.echo({ a: [1] }); text(r); text(new Date(0).getTime())",
    outcome: completed('{"a":[1]}0'),
    calls: ['{"a":[1]}'],
  },
  {
    name: 'String, Array and RegExp prototypes replaced, then an error is described',
    code: "String.prototype.slice = () => 'S'; String.prototype.startsWith = () => true; RegExp.prototype.exec = () => ['<anonymous>:99:99', '99', '99']; Array.prototype.sort = () => { throw new Error('sort') }; Object.keys = () => []; Number = () => 0; String = () => 'str'; await tools.echo({ b: 1, a: 2 }); throw new TypeError('described')",
    outcome: threw('TypeError: described (line 1, column 306)'),
    calls: ['{"b":1,"a":2}'],
  },
  {
    name: "Object.prototype setters for the bridge's own field names",
    code: "for (const k of ['resolve', 'reject', 'tool', 'args', 'seq', 'state', 'status', 'result', 'code', 'message', 'calls', 'output']) Object.defineProperty(Object.prototype, k, { set() { throw new Error('set ' + k) }, get() { return 'poison' }, configurable: true }); const r = await tools.echo({ x: 1 }); text(r)",
    outcome: completed('{"x":1}'),
    calls: ['{"x":1}'],
  },
  {
    name: 'iterators of Array and Map, and Map.prototype.forEach, replaced',
    code: "Array.prototype[Symbol.iterator] = function* () { yield 'forged' }; Map.prototype.forEach = () => {}; Map.prototype[Symbol.iterator] = function* () {}; const p1 = tools.echo({ i: 1 }); const p2 = tools.echo({ i: 2 }); text((await p1) + (await p2))",
    outcome: completed('{"i":1}{"i":2}'),
    calls: ['{"i":1}', '{"i":2}'],
  },

  // ---- infinite loops --------------------------------------------------------------------------
  { name: 'a synchronous infinite loop', code: 'while (true) {}', outcome: WALL },
  { name: 'an infinite loop of awaits', code: 'for (;;) await null', outcome: WALL },
  { name: 'an infinite chain of microtasks', code: 'const spin = () => { Promise.resolve().then(spin) }; spin(); await new Promise(() => {})', outcome: WALL },
  { name: 'an infinite loop in a getter read by text()', code: 'text({ get a() { for (;;) {} } })', outcome: WALL },
  { name: 'an infinite loop in a catch handler', code: 'await tools.echo(5).catch(() => { for (;;) {} })', outcome: WALL },
  { name: 'an infinite loop in a finally block after a throw', code: 'try { throw new Error("x") } finally { for (;;) {} }', outcome: WALL },
  { name: 'an infinite loop after a tool call, in the resumed step', code: 'await tools.echo({ step: 1 }); for (;;) {}', outcome: WALL, calls: ['{"step":1}'] },
  {
    name: 'CPU burnt a little in every step until the program budget runs out',
    code: 'for (let step = 0; ; step++) { let x = 0; for (let i = 0; i < 2e7; i++) x += i % 7; await tools.echo({ step }) }',
    outcome: CPU,
  },

  // ---- deep recursion --------------------------------------------------------------------------
  {
    name: 'unbounded recursion, uncaught',
    code: 'const f = () => f(); f()',
    outcome: threw('RangeError: Maximum call stack size exceeded (line 1, column 17)'),
  },
  {
    name: 'unbounded recursion, caught, then a tool call',
    code: 'const f = (n) => f(n + 1) + 1; try { f(0) } catch (e) { text(e.name) } text(await tools.echo({ after: true }))',
    outcome: completed('RangeError{"after":true}'),
    calls: ['{"after":true}'],
  },
  {
    name: 'unbounded async recursion, each level holding memory',
    code: 'const f = async () => { const big = new Array(1e4).fill(0); await null; return (await f()) + big.length }; await f()',
    outcome: MEMORY,
  },
  {
    name: 'tool arguments nested 10,000 deep (20 KB) are refused past 128 levels',
    code: "const o = JSON.parse('['.repeat(1e4) + ']'.repeat(1e4)); const r = await tools.echo({ o }); text(r.length)",
    outcome: incomplete('arguments_too_large', 'Arguments of tools.echo nest deeper than 128 levels'),
  },
  {
    name: 'a value nested 10,000 deep thrown: its description is cut at 4096 characters',
    code: "throw JSON.parse('['.repeat(1e4) + ']'.repeat(1e4))",
    outcome: threw(`Uncaught ${'['.repeat(4096 - 'Uncaught '.length)}…`),
  },
  {
    name: 'a thrown object whose getter recurses: describing it overflows the stack',
    code: 'throw { get a() { return this.a } }',
    outcome: threw('Uncaught value that cannot be described'),
  },
  {
    name: 'recursion through getters while text() serialises',
    code: 'const o = { get a() { return o.a } }; text(o)',
    outcome: threw('RangeError: Maximum call stack size exceeded (line 1, column 23)'),
  },

  // ---- memory bombs ------------------------------------------------------------------------
  { name: 'a memory bomb of arrays', code: 'const a = []; for (;;) a.push(new Array(1e5).fill(1.5))', outcome: MEMORY },
  { name: 'a memory bomb of flat strings', code: "const a = []; for (let i = 0; ; i++) a.push(('x'.repeat(1e6) + i).toUpperCase())", outcome: MEMORY },
  {
    name: 'a string doubled until V8 refuses it',
    code: "let s = 'ab'; for (;;) s += s",
    outcome: threw('RangeError: Invalid string length (line 1, column 29)'),
  },
  {
    name: 'many 1 MiB ArrayBuffers',
    code: 'const a = []; for (;;) a.push(new ArrayBuffer(1 << 20))',
    outcome: threw('RangeError: Array buffer allocation failed (line 1, column 31)'),
  },
  // 64 KiB each: the allocator refuses one before the wrappers fill the heap. With 1 KiB buffers
  // the heap limit won the race about one run in seven, and the outcome was not stable.
  {
    name: 'many 64 KiB ArrayBuffers',
    code: 'const a = []; for (;;) a.push(new ArrayBuffer(65536))',
    outcome: threw('RangeError: Array buffer allocation failed (line 1, column 31)'),
  },
  {
    name: 'one 2 GiB ArrayBuffer',
    code: 'const b = new ArrayBuffer(2 ** 31); text(b.byteLength)',
    outcome: threw('RangeError: Array buffer allocation failed (line 1, column 11)'),
  },
  {
    name: 'one 1 GiB Float64Array, caught',
    code: 'try { new Float64Array(2 ** 27) } catch (e) { text(e.message) }',
    outcome: completed('Array buffer allocation failed'),
  },
  { name: 'a memory bomb of Map values', code: 'const m = new Map(); for (let i = 0; ; i++) m.set(i, new Array(1e4).fill(i))', outcome: MEMORY },
  {
    name: 'a memory bomb of closures in a promise chain',
    code: 'let p = Promise.resolve(); for (;;) { const big = new Array(1e4).fill(0); p = p.then(() => big) }',
    outcome: MEMORY,
  },
  {
    name: 'a memory bomb, caught, then text()',
    code: 'try { const a = []; for (;;) a.push(new Array(1e5).fill(1.5)) } catch { } text("survived")',
    outcome: MEMORY,
  },

  // ---- regex catastrophic backtracking ------------------------------------------------------
  { name: 'catastrophic backtracking: (a+)+$', code: "text(/(a+)+$/.test('a'.repeat(40) + 'b'))", outcome: WALL },
  { name: 'catastrophic backtracking inside String.prototype.replace', code: "text('x'.repeat(30).replace(/(x|x)*y/, 'z'))", outcome: WALL },

  // ---- JSON bombs -----------------------------------------------------------------------------
  {
    // 20,000 deep, not 100,000: on Node 24 (V8 13) 100,000 levels took 110–280 ms of CPU in an
    // IsolateProgram, within reach of the 300 ms step on a loaded machine (it ended on the wall
    // clock once in the suite); 20,000 take 5–40 ms. Still twice as deep as the values below.
    name: 'a deeply nested JSON.parse',
    code: "const v = JSON.parse('['.repeat(2e4) + ']'.repeat(2e4)); let d = 0; for (let x = v; Array.isArray(x) && x.length; x = x[0]) d++; text(d)",
    outcome: completed('19999'),
  },
  {
    name: 'a deeply nested JSON.parse, then JSON.stringify of it',
    code: "const v = JSON.parse('['.repeat(1e4) + ']'.repeat(1e4)); text(JSON.stringify(v).length)",
    outcome: completed('20000'),
  },
  {
    // V8 13 builds the 100 MB result without the heap limit seeing it: with time limits out of
    // reach it completes ("100030001", 2 s of CPU, the heap at 96 MiB of a 32 MiB isolate; 4e4
    // items made 400 MB in 8 s, never disposed). Within the 300 ms step the step's clock ends it,
    // 50–250 ms late (measured on Node 24): past 200 ms a worker is frozen for it, so the message
    // says which, and the code does not. One such string took 267–304 ms on a loaded 2-core
    // machine, against the 300 ms step: it completed there. The program makes them without end,
    // so no machine finishes it within any step limit.
    name: 'a huge JSON.stringify',
    code: "let n = 0; for (;;) n += JSON.stringify(new Array(1e4).fill('x'.repeat(1e4))).length; text(n)",
    outcome: incomplete('wall_time_exceeded'),
  },
  {
    name: 'JSON.parse with a reviver that calls tools',
    code: "const v = JSON.parse('[1,2,3]', (k, v) => (k === '' ? v : (tools.echo({ v }), v * 2))); text(v.join())",
    outcome: completed('2,4,6'),
  },

  // ---- text floods ----------------------------------------------------------------------------
  { name: 'many small text() calls', code: "for (;;) text('x')", outcome: OUTPUT },
  { name: 'one huge text()', code: "text('x'.repeat(1e7))", outcome: OUTPUT },
  { name: 'a text flood, caught', code: "try { for (;;) text('0123456789') } catch { } text('after')", outcome: OUTPUT },
  { name: 'many image() calls', code: "for (;;) image('https://example.com/a.png')", outcome: OUTPUT },

  // ---- call floods ----------------------------------------------------------------------------
  { name: 'thousands of un-awaited calls', code: 'for (let i = 0; i < 5000; i++) tools.echo({ i }); text("done")', outcome: IN_FLIGHT },
  { name: 'an un-awaited call rejected for its arguments', code: 'tools.echo(5); text("done")', outcome: completed('done') },
  { name: "an unhandled rejection of the program's own", code: "Promise.reject(new Error('x')); text('done')", outcome: completed('done') },
  {
    // isolated-vm reads a rejection left unhandled (its message, its stack) as it copies it out of
    // the isolate after the call, outside the call's timeout. In a worker, the step is reported
    // running past its limit and the worker stopped for it; in process, the isolate is disposed
    // 200 ms past the limit (RUNAWAY_THRESHOLDS_MS' `freeze`). The messages say which.
    name: 'an unhandled rejection whose message getter loops forever',
    code: "const e = new Error('x'); Object.defineProperty(e, 'message', { get() { for (;;) {} } }); Promise.reject(e); text('done')",
    outcome: incomplete('wall_time_exceeded'),
  },
  {
    name: 'unhandled rejections without end, each made as the last one is read, saying they are isolated-vm running out of memory',
    code: "const forge = () => { const e = new Error('Isolate was disposed during execution due to memory limit'); Object.defineProperty(e, 'stack', { get() { Promise.resolve().then(forge); return 'Isolate was disposed during execution due to memory limit' } }); Promise.reject(e) }; forge(); text(JSON.stringify(await tools.echo({ a: 1 })))",
    outcome: incomplete('program_threw'),
  },
  {
    name: 'thousands of un-awaited calls whose rejections are caught',
    code: 'for (let i = 0; i < 5000; i++) tools.echo({ i }).catch(() => {}); await null; text("done")',
    outcome: IN_FLIGHT,
  },
  { name: 'calls in a loop with await', code: 'for (let i = 0; ; i++) await tools.echo({ i })', outcome: CALLS },
  {
    name: 'calls in a loop with await, the limit error caught',
    code: 'for (let i = 0; i < 100; i++) { try { await tools.echo({ i }) } catch { } } text("after")',
    outcome: CALLS,
  },

  // ---- never-settling promises ----------------------------------------------------------------
  { name: 'a promise nothing settles', code: 'await new Promise(() => {})', outcome: STALLED },
  { name: 'Promise.race of nothing', code: 'await Promise.race([])', outcome: STALLED },
  {
    name: 'an un-awaited call, then a promise nothing settles',
    code: 'tools.echo({ lost: true }); await new Promise(() => {})',
    outcome: STALLED,
    calls: ['{"lost":true}'],
  },
  {
    name: 'a call made after the body settled is dropped',
    code: "Promise.resolve().then(() => Promise.resolve()).then(() => tools.echo({ late: true })); text('done')",
    outcome: completed('done'),
    calls: [],
  },

  // ---- throwing non-Errors ---------------------------------------------------------------------
  { name: 'throw undefined', code: 'throw undefined', outcome: threw('Uncaught undefined') },
  { name: 'throw null', code: 'throw null', outcome: threw('Uncaught null') },
  { name: 'throw a number', code: 'throw 42', outcome: threw('Uncaught 42') },
  { name: 'throw a symbol', code: "throw Symbol('sym')", outcome: threw('Uncaught Symbol(sym)') },
  { name: 'throw a BigInt', code: 'throw 10n', outcome: threw('Uncaught 10') },
  { name: 'throw a frozen object', code: 'throw Object.freeze({ a: 1, nested: Object.freeze([1]) })', outcome: threw('Uncaught {"a":1,"nested":[1]}') },
  {
    name: 'throw an Error whose message getter throws',
    code: "const e = new Error('x'); Object.defineProperty(e, 'message', { get() { throw new Error('gotcha') } }); throw e",
    outcome: threw('Uncaught value that cannot be described'),
  },
  {
    name: 'throw an Error whose name getter loops forever',
    code: "const e = new Error('x'); Object.defineProperty(e, 'name', { get() { for (;;) {} } }); throw e",
    outcome: WALL,
  },
  {
    name: 'throw an Error whose stack getter throws',
    code: "const e = new TypeError('x'); Object.defineProperty(e, 'stack', { get() { throw 1 } }); throw e",
    outcome: threw('Uncaught value that cannot be described'),
  },
  {
    name: 'throw an Error with a 1 MB message',
    code: "throw new Error('m'.repeat(1e6))",
    outcome: threw(`Error: ${'m'.repeat(4096 - 'Error: '.length)}…`),
  },
  { name: 'throw a function', code: 'throw function evil() { return 1 }', outcome: threw('Uncaught function evil() { return 1 }') },
  {
    name: 'throw an object whose toJSON and toPrimitive throw',
    code: 'throw { toJSON() { throw 1 }, [Symbol.toPrimitive]() { throw 2 } }',
    outcome: threw('Uncaught value that cannot be described'),
  },
  {
    name: 'throw a revoked Proxy',
    code: 'const r = Proxy.revocable({}, {}); r.revoke(); throw r.proxy',
    outcome: threw('Uncaught value that cannot be described'),
  },
  {
    name: 'reject with a non-Error after a tool call',
    code: 'await tools.echo({}); await Promise.reject(Symbol.iterator)',
    outcome: threw('Uncaught Symbol(Symbol.iterator)'),
    calls: ['{}'],
  },

  // ---- WeakRef / FinalizationRegistry ---------------------------------------------------------
  {
    name: 'FinalizationRegistry callbacks that would call text(): the runtime never calls them back',
    code: "const r = new FinalizationRegistry((i) => { text('cleanup ' + i) }); for (let i = 0; i < 2e5; i++) r.register({ a: new Array(10) }, i); text('registered')",
    outcome: completed('registered'),
  },
  {
    name: 'a FinalizationRegistry whose callback makes tool calls while the program waits',
    code: 'let n = 0; const r = new FinalizationRegistry((i) => { if (n++ < 4) tools.echo({ finalized: i }) }); for (let i = 0; i < 1e4; i++) r.register({ a: [i] }, i); const out = await tools.echo({ waiting: true }); text(out)',
    outcome: completed('{"waiting":true}'),
  },
  {
    name: 'a memory bomb of WeakRef targets (kept alive for the job)',
    code: 'const a = []; for (;;) a.push(new WeakRef(new Array(1e4).fill(1.5)))',
    outcome: MEMORY,
  },

  // ---- SharedArrayBuffer, Atomics, WebAssembly, eval ------------------------------------------
  {
    name: 'SharedArrayBuffer, Atomics and WebAssembly are gone, and cannot be found again',
    code: "const found = [typeof SharedArrayBuffer, typeof Atomics, typeof WebAssembly, typeof globalThis.WebAssembly, Object.getOwnPropertyNames(globalThis).filter((n) => /Shared|Atomics|WebAssembly/.test(n)).length, Function('return typeof WebAssembly')()]; text(found.join())",
    outcome: completed('undefined,undefined,undefined,undefined,0,undefined'),
  },
  {
    name: 'Atomics.wait, as if it were there',
    code: 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)',
    outcome: threw('ReferenceError: Atomics is not defined (line 1, column 1)'),
  },
  {
    name: 'eval and new Function run inside the isolate only',
    code: "text([eval('1 + 1'), new Function('a', 'return a * 2')(21), eval('typeof process'), (0, eval)('typeof globalThis.require')].join())",
    outcome: completed('2,42,undefined,undefined'),
  },

  // ---- date and random manipulation (the next program must not see it) -------------------------
  {
    name: 'Date, Date.now, Math.random and Intl overwritten',
    code: "Date.now = () => 0; Math.random = () => 0.5; Date.prototype.getTime = () => 1; Intl.DateTimeFormat = null; globalThis.Date = function () { return 'fake' }; Object.freeze(Math); text([Date.now === undefined, Math.random(), Date()].join())",
    outcome: completed('true,0.5,fake'),
  },
  {
    name: 'globalThis frozen and its prototype replaced',
    code: 'Object.setPrototypeOf(globalThis, null); Object.freeze(globalThis); Object.freeze(Object.prototype); Object.freeze(Array.prototype); text(await tools.echo({ frozen: true }))',
    outcome: completed('{"frozen":true}'),
    calls: ['{"frozen":true}'],
  },

  // ---- beyond the isolate: found by the crash hunt (see `harm`) ----------------------------------
  {
    // Contained on Node 20. On Node 24 (V8 13) it either aborts its process (V8's fatal
    // CALL_AND_RETRY_LAST on a flattening, which isolated-vm answers with abort()) or has its
    // isolate disposed at the heap limit and goes on doubling for seconds, the process at
    // 330–470 MB; which one depends on the load. From 'ab' it aborted 4 of 4 IsolatePrograms,
    // then 5 of 8 on a busier machine, and through workers half the steps ended on the heap
    // limit (in this process's suite it aborted the test runner); from 'abc' 16 of 16, then 5 of
    // 14 beside two CPU burners. From 'abcde' its isolate was disposed every time (30 of 30
    // isolates, idle, loaded and beside two burners: at 0.3–1.4 s, the step going on 0.9–3.5 s
    // past it; 6 of 6 steps through workers): a worker is stopped for it,
    // or, on a machine where it returns within 250 ms of the disposal, the step ends on the heap
    // limit by itself; the code is the same.
    name: '[isolate wedge] a memory bomb of doubled strings that are flattened goes on after its isolate is disposed (contained on Node 20; from other sizes it aborts its process on Node 24)',
    code: "let s = 'abcde'; for (;;) { s += s; /x/.test(s) }",
    outcome: incomplete('memory_limit_exceeded'),
    harm: 'wedge',
  },
  {
    // It aborted its process on Node 20. On Node 24 its isolate is disposed at 1.2–2.3 s, and the
    // fill goes on for 35–50 s more, the process at 2.3 GB (4 of 4 in an IsolateProgram).
    name: '[isolate wedge] new Array(2 ** 27).fill(0) fills past the heap limit and goes on after its isolate is disposed (a process killer on Node 20): its worker reports it, and is stopped for it',
    code: 'const a = new Array(2 ** 27).fill(0); text(a.length)',
    outcome: NATIVE_MEMORY,
    harm: 'wedge',
  },
  {
    // It aborted its process on Node 20 (SIGTRAP in Runtime_StringToArray). On Node 24 its
    // isolate is disposed at 0.5–1.1 s and the split returns 4.3–5.6 s later (4 of 4 in an
    // IsolateProgram).
    name: "[isolate wedge] 'x'.repeat(2 ** 27).split('') goes on after its isolate is disposed (a process killer on Node 20): its worker reports it, and is stopped for it",
    code: "const a = 'x'.repeat(2 ** 27).split(''); text(a.length)",
    outcome: NATIVE_MEMORY,
    harm: 'wedge',
  },
  {
    // The prelude ignores maxByteLength, so this is a loop of small arrays. On Node 24 (V8 13) a
    // loop making arrays of 1,024 elements or fewer goes on after its isolate is disposed for the
    // heap limit (at 0.4 s), the process growing 150 MB a second (4 GB at 29 s in an
    // IsolateProgram; the same with a bare `new Array(1024)` or 256; arrays of 4,096 end at the
    // limit; with --no-turbofan it ends too). On Node 20 the heap limit ended it.
    name: '[isolate wedge] resizable ArrayBuffers reserving 4 GiB each, with 8 KiB arrays: maxByteLength is ignored, and the loop goes on after its isolate is disposed: its worker reports it, and is stopped for it',
    code: 'const a = []; for (;;) a.push(new ArrayBuffer(1, { maxByteLength: 2 ** 32 }), new Array(1024).fill(0.5))',
    outcome: NATIVE_MEMORY,
    harm: 'wedge',
  },
  {
    name: '[was a memory escape] resizable ArrayBuffers grown past the heap limit: resize is gone',
    code: 'const kept = []; for (let i = 0; i < 6; i++) { const b = new ArrayBuffer(0, { maxByteLength: 2 ** 26 }); b.resize(2 ** 26); new Uint8Array(b).fill(1); kept.push(b); await tools.echo({ i }) } text(kept.length)',
    outcome: threw('TypeError: b.resize is not a function (line 1, column 108)'),
    harm: 'escape',
  },
  {
    name: '[isolate wedge] Array.prototype.indexOf over a 2 ** 53 - 1 length object ignores the step timeout: its worker reports it running past its limit, and is stopped for it',
    code: 'text(Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1))',
    outcome: incomplete(
      'wall_time_exceeded',
      'One execution step ran past its wall-clock limit of 300 ms and its isolate could not stop it; the worker running it was stopped',
    ),
    harm: 'wedge',
  },
  {
    name: '[isolate wedge] ICU word segmentation of a long Thai text fills the heap and goes on after its isolate is disposed: its worker reports it, and is stopped for it',
    code: ICU_RUNAWAY,
    outcome: incomplete(
      'memory_limit_exceeded',
      `The program's heap reached its limit of ${CONTAINMENT_LIMITS.memoryMb} MiB in a native call that did not stop with its isolate; the worker running it was stopped`,
    ),
    harm: 'wedge',
  },
  {
    // Not ICU: Array.from over a string's iterator runs in a builtin that does not see the
    // isolate's termination either. In a bare 64 MiB isolate it was disposed at 1.5 s and its
    // call returned after 46 s, the process at 782 MB.
    name: '[isolate wedge] Array.from over a long string fills the heap and goes on after its isolate is disposed: its worker reports it, and is stopped for it',
    code: "text(String(Array.from('สวัสดีครับ'.repeat(2 ** 21)).length))",
    outcome: incomplete(
      'memory_limit_exceeded',
      `The program's heap reached its limit of ${CONTAINMENT_LIMITS.memoryMb} MiB in a native call that did not stop with its isolate; the worker running it was stopped`,
    ),
    harm: 'wedge',
  },
  {
    name: '[was an isolate wedge] a FinalizationRegistry callback that loops forever: never called back',
    code: "const r = new FinalizationRegistry(() => { for (;;) {} }); for (let i = 0; i < 2e5; i++) r.register({ a: new Array(10) }, i); text('registered')",
    outcome: completed('registered'),
    harm: 'wedge',
  },
];

/**
 * A normal program, run after every hostile one on the same server: it makes a tool call and
 * checks that the built-ins it sees are pristine. Its result is exactly `NORMAL_PROGRAM_RESULT`.
 */
export const NORMAL_PROGRAM = [
  "const r = JSON.parse(await tools.echo({ list: [1, 2], s: 'é' }));",
  'const a = Math.random(); const b = Math.random();',
  'const checks = [',
  "  r.list.join() === '1,2' && r.s === 'é',",
  "  typeof Date.now() === 'number' && Date.now() === new Date().getTime() && Date.now() > 1.6e12 && Date() === new Date().toString(),",
  '  a !== b && a >= 0 && a < 1 && b >= 0 && b < 1,',
  "  !('toJSON' in {}) && !('then' in {}) && !('0' in []) && Object.getPrototypeOf(globalThis) !== null,",
  "  JSON.stringify({ x: [1, 'y'] }) === '{\"x\":[1,\"y\"]}' && JSON.parse('[1]')[0] === 1,",
  '  new Map([[1, 2]]).get(1) === 2 && Reflect.apply(Math.max, null, [1, 3]) === 3,',
  "  [typeof Atomics, typeof SharedArrayBuffer, typeof WebAssembly, typeof process].every((t) => t === 'undefined'),",
  "  !Object.isFrozen(Math) && !Object.isFrozen(Array.prototype) && typeof Intl.DateTimeFormat === 'function',",
  '];',
  'text(checks.join());',
].join('\n');

export const NORMAL_PROGRAM_RESULT = 'true,true,true,true,true,true,true,true';
