import { describe, expect, it } from 'vitest';
import { runProgram } from '../../runtime/run-program.ts';

/** Runs a program with no tools and returns what it printed, failing loudly if it did not complete. */
async function output(code: string, options: Parameters<typeof runProgram>[1] = {}): Promise<string> {
  const run = await runProgram(code, options);
  if (run.status !== 'completed') throw new Error(`program ended ${run.status}: ${JSON.stringify(run.error)}`);
  return run.result ?? '';
}

describe('the globals a program sees', () => {
  it.each([
    ['console'],
    ['require'],
    ['process'],
    ['fetch'],
    ['setTimeout'],
    ['setInterval'],
    ['setImmediate'],
    ['queueMicrotask'],
    ['Atomics'],
    ['SharedArrayBuffer'],
    ['WebAssembly'],
    ['global'],
    ['module'],
    ['Buffer'],
    ['performance'],
    ['TextEncoder'],
    ['structuredClone'],
  ])('%s is absent', async (name) => {
    expect(await output(`text(typeof ${name})`)).toBe('undefined');
  });

  it.each([
    ['tools', 'object'],
    ['text', 'function'],
    ['image', 'function'],
    ['JSON', 'object'],
    ['Math', 'object'],
    ['Promise', 'function'],
    ['Intl', 'object'],
    ['Map', 'function'],
    ['Proxy', 'function'],
    ['Reflect', 'object'],
    ['BigInt', 'function'],
    ['eval', 'function'],
  ])('%s is a %s', async (name, type) => {
    expect(await output(`text(typeof ${name})`)).toBe(type);
  });

  it('has only ECMAScript built-ins plus tools, text and image', async () => {
    const names = JSON.parse(await output('text(JSON.stringify(Object.getOwnPropertyNames(globalThis)))')) as string[];
    const ecmascript = [
      'Object',
      'Function',
      'Array',
      'Number',
      'parseFloat',
      'parseInt',
      'Infinity',
      'NaN',
      'undefined',
      'Boolean',
      'String',
      'Symbol',
      'Date',
      'Promise',
      'RegExp',
      'Error',
      'AggregateError',
      'EvalError',
      'RangeError',
      'ReferenceError',
      'SyntaxError',
      'TypeError',
      'URIError',
      'globalThis',
      'JSON',
      'Math',
      'Intl',
      'ArrayBuffer',
      'Uint8Array',
      'Int8Array',
      'Uint16Array',
      'Int16Array',
      'Uint32Array',
      'Int32Array',
      'Float32Array',
      'Float64Array',
      'Uint8ClampedArray',
      'BigUint64Array',
      'BigInt64Array',
      'DataView',
      'Map',
      'BigInt',
      'Set',
      'WeakMap',
      'WeakSet',
      'Proxy',
      'Reflect',
      'FinalizationRegistry',
      'WeakRef',
      'decodeURI',
      'decodeURIComponent',
      'encodeURI',
      'encodeURIComponent',
      'escape',
      'unescape',
      'eval',
      'isFinite',
      'isNaN',
      // New in Node 24's V8: the iterator helpers' constructor, Float16Array, explicit resource management.
      'Iterator',
      'Float16Array',
      'DisposableStack',
      'AsyncDisposableStack',
      'SuppressedError',
    ];
    expect(names.filter((name) => !ecmascript.includes(name)).sort()).toEqual(['image', 'text', 'tools']);
  });

  it('runs the code as an async function body: top-level await works', async () => {
    expect(await output('const x = await Promise.resolve(41); text(x + 1)')).toBe('42');
  });

  it('runs the code in strict mode', async () => {
    const run = await runProgram('undeclared = 1');
    expect(run.error).toEqual({ code: 'program_threw', message: 'ReferenceError: undeclared is not defined (line 1, column 12)' });
  });

  it('treats import declarations as a syntax error', async () => {
    const run = await runProgram('import fs from "fs";\ntext(1)');
    expect(run.status).toBe('incomplete');
    expect(run.error?.code).toBe('syntax_error');
  });

  it('rejects dynamic import()', async () => {
    expect(await output('try { await import("fs"); text("loaded") } catch (e) { text(e.message) }')).toBe('Not supported');
  });

  it('cannot close the wrapper early with a stray "})"', async () => {
    const run = await runProgram('}); text("escaped"); (async () => {');
    expect(run.error?.code).toBe('syntax_error');
  });

  it('reports the line and column of an uncaught error in the program', async () => {
    const run = await runProgram('const a = 1;\nconst b = 2;\nnull.boom;');
    expect(run.error).toEqual({ code: 'program_threw', message: "TypeError: Cannot read properties of null (reading 'boom') (line 3, column 6)" });
  });

  it('keeps globals from one program out of the next (a fresh isolate each)', async () => {
    await output('globalThis.leak = 1; Object.prototype.polluted = true; text("")');
    expect(await output('text(typeof leak + " " + typeof ({}).polluted)')).toBe('undefined undefined');
  });

  it('exposes tools as a frozen object without prototype', async () => {
    const tools = { a: { run: () => 'x' } };
    expect(await output('text([Object.isFrozen(tools), Object.getPrototypeOf(tools), Object.keys(tools)])', { tools })).toBe('[true,null,["a"]]');
    expect(await output('"use strict"; try { tools.b = 1 } catch (e) { text(e.constructor.name) }', { tools })).toBe('TypeError');
  });

  it('reaches names that are not identifiers by their name and by an underscore alias', async () => {
    const tools = { 'get-weather.v2': { run: () => 'sunny' }, '3d': { run: () => 'cube' } };
    expect(await output('text(await tools["get-weather.v2"]({}) + await tools.get_weather_v2({}) + await tools._3d({}))', { tools })).toBe('sunnysunnycube');
  });

  it('never lets an alias shadow another tool with that real name', async () => {
    const tools = { 'a-b': { run: () => 'dash' }, a_b: { run: () => 'underscore' } };
    expect(await output('text(await tools.a_b({}) + await tools["a-b"]({}))', { tools })).toBe('underscoredash');
  });
});

describe('text() and image()', () => {
  it.each([
    ['a string as it is', 'text("héllo")', 'héllo'],
    ['numbers through JSON.stringify', 'text(1.5); text(-0)', '1.50'],
    ['objects and arrays through JSON.stringify', 'text({a: [1, "b"]})', '{"a":[1,"b"]}'],
    ['null', 'text(null)', 'null'],
    ['undefined as "undefined"', 'text(undefined)', 'undefined'],
    ['bigints as their digits', 'text(10n ** 20n)', '100000000000000000000'],
    ['an object with toJSON', 'text({toJSON() { return "custom" }})', '"custom"'],
    ['several calls concatenated in order', 'text("a"); text(1); text("c")', 'a1c'],
    ['nothing as an empty result', '', ''],
  ])('text() takes %s', async (_, code, expected) => {
    expect(await output(code)).toBe(expected);
  });

  it('throws into the program when a value cannot be serialised', async () => {
    expect(await output('const o = {}; o.o = o; try { text(o) } catch (e) { text(e.constructor.name) }')).toBe('TypeError');
  });

  it.each([
    ['an https URL', 'image("https://example.com/a.png")', '![image](https://example.com/a.png)'],
    ['a data URL', 'image("data:image/png;base64,iVBORw0KGgo=")', '![image](data:image/png;base64,iVBORw0KGgo=)'],
    ['an item with detail', 'image({image_url: "https://example.com/b.png", detail: "high"})', '![image](https://example.com/b.png)'],
    ['text around it, in order', 'text("see "); image("https://e.com/c.png"); text(".")', 'see ![image](https://e.com/c.png).'],
  ])('image() takes %s and appears in the result as a markdown image', async (_, code, expected) => {
    expect(await output(code)).toBe(expected);
  });

  it.each([
    ['an http URL', 'image("http://example.com/a.png")'],
    ['a non-image data URL', 'image("data:text/plain;base64,aGk=")'],
    ['a number', 'image(5)'],
    ['an unknown detail', 'image({image_url: "https://e.com/a.png", detail: "huge"})'],
  ])('image() rejects %s with a TypeError inside the program', async (_, code) => {
    expect(await output(`try { ${code}; text("accepted") } catch (e) { text(e.name) }`)).toBe('TypeError');
  });
});

describe('determinism', () => {
  it('seeds Math.random: the same seed draws the same numbers, another seed others', async () => {
    const draw = 'text([Math.random(), Math.random(), Math.random()])';
    const first = await output(draw, { seed: 7 });
    expect(await output(draw, { seed: 7 })).toBe(first);
    expect(await output(draw, { seed: 8 })).not.toBe(first);
    for (const value of JSON.parse(first) as number[]) expect(value >= 0 && value < 1).toBe(true);
  });

  it('freezes Date at the program clock', async () => {
    const clock = Date.UTC(2026, 0, 2, 3, 4, 5);
    expect(await output('text([Date.now(), new Date().toISOString(), new Date(0).getTime(), typeof Date()])', { clock })).toBe(
      `[${clock},"2026-01-02T03:04:05.000Z",0,"string"]`,
    );
    expect(await output('text(new Date() instanceof Date && Date.prototype.constructor === Date && Date.name)', { clock })).toBe('Date');
  });

  it('pins Intl date formatting without a date to the program clock', async () => {
    const clock = Date.UTC(2020, 5, 15, 12);
    expect(await output('text(new Intl.DateTimeFormat("en-US", {timeZone: "UTC"}).format())', { clock })).toBe('6/15/2020');
  });

  it('does not let the clock move while the program runs', async () => {
    expect(await output('const a = Date.now(); for (let i = 0; i < 1e6; i++); text(Date.now() - a)')).toBe('0');
  });
});
