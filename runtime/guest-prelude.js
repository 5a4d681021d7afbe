// Runs inside a program's isolate before the program, as a plain script (never transpiled).
// It is one expression statement, `installSandbox`; the snapshot every program's isolate is made
// from (runtime/prepared-isolate.ts) runs it once per process and calls it (SandboxSetup: our own
// constants, nothing of any request), so every context of such an isolate starts with the
// returned `dispatch` function, which the host takes and keeps. The program's configuration
// comes with its code, in the `start` op (the checker's context takes one with `configure`).
// Nothing defined here is reachable from the program except the three globals `start` installs:
// `tools`, `text` and `image`.
//
// Every intrinsic used after the program starts is captured first, so a program that replaces
// `JSON`, `Promise`, `Map.prototype.set` or adds setters to `Object.prototype` changes only
// what its own code sees. Only strings cross to the host: `dispatch` takes an op's name and its
// payload as JSON, and answers every op with a JSON object. runtime/guest-protocol.ts declares
// the ops, their payloads and the replies, and the host parses every reply with it.
(function installSandbox(setupJson) {
  'use strict';

  const jsonParse = JSON.parse;
  const jsonStringify = JSON.stringify;
  const reflectApply = Reflect.apply;
  const reflectConstruct = Reflect.construct;
  const defineProperty = Object.defineProperty;
  const freeze = Object.freeze;
  const isArray = Array.isArray;
  const PromiseCtor = Promise;
  const promiseThen = Promise.prototype.then;
  const promiseReject = Promise.reject;
  const MapCtor = Map;
  const mapGet = Map.prototype.get;
  const mapSet = Map.prototype.set;
  const mapDelete = Map.prototype.delete;
  const mapClear = Map.prototype.clear;
  const mapForEach = Map.prototype.forEach;
  const mapSizeGetter = Reflect.getOwnPropertyDescriptor(Map.prototype, 'size').get;
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const StringCtor = String;
  const stringSlice = String.prototype.slice;
  const stringStartsWith = String.prototype.startsWith;
  const regexpExec = RegExp.prototype.exec;
  const objectPrototypeToString = Object.prototype.toString;
  const objectKeys = Object.keys;
  const hasOwn = Object.hasOwn;
  const arraySort = Array.prototype.sort;
  const NumberCtor = Number;
  const mathImul = Math.imul;
  const AsyncFunction = (async function () {}).constructor;
  const FunctionCtor = Function;
  const RealDate = Date;
  const dateToString = Date.prototype.toString;

  const setup = jsonParse(setupJson);
  // The templates of the messages of the limits enforced here (runtime/limits.ts), by code.
  const limitMessages = setup.limitMessages;
  // The program's configuration (SandboxConfig), set once by `configure`: nothing of a program
  // is in the isolate before its `start`.
  let config = null;
  let limits = null;
  const STRICT_PREFIX = '"use strict";';
  const MAX_ERROR_MESSAGE = 4096;

  // ---- program state --------------------------------------------------------------------
  const pending = new MapCtor(); // seq -> { resolve, reject, tool }: calls awaiting output
  const unreported = new MapCtor(); // seq -> { tool, args }: calls the host has not seen yet
  let nextSeq = 0;
  let output = '';
  let settled = false;
  let outcome = null; // { status: 'completed', result } | { status: 'failed', code, message }
  let fatal = null; // a limit hit: ends the program whatever the program catches
  // Replay: the calls an earlier run of this program made, with the answers they got, handed in
  // part by part (seq -> {tool, args, output, error?}; `recordedCount` in all). Batches of
  // recorded calls are answered from here without leaving the isolate; an entry is dropped once
  // delivered. From the first answer over the size limit on, calls are `withheld`: no answer.
  let recordedCount = 0;
  const entries = { __proto__: null };
  // Recorded batches delivered so far: the live run was resumed once for each.
  let replayedBatches = 0;

  function loadEntries(part) {
    for (let i = 0; i < part.length; i++) entries[part[i].seq] = part[i];
  }

  function size(map) {
    return reflectApply(mapSizeGetter, map, []);
  }

  function truncate(text, max) {
    return text.length > max ? reflectApply(stringSlice, text, [0, max]) + '…' : text;
  }

  /** Records what ends the program whatever it catches (first one wins), and returns the error to throw at it. */
  function endProgram(code, message) {
    if (fatal === null) fatal = { __proto__: null, code, message };
    return new ErrorCtor(message);
  }

  const PLACEHOLDER = /^\{(\w+)\}/;
  /**
   * A limit's message: its template with each `{name}` replaced by `values[name]`, in one pass,
   * as runtime/limits.ts limitMessage does. By hand, with captured built-ins: the program may
   * have replaced `String.prototype.replace` by the time a limit is hit.
   */
  function limitMessage(code, values) {
    const template = limitMessages[code];
    let message = '';
    let at = 0;
    while (at < template.length) {
      const placeholder = template[at] === '{' ? reflectApply(regexpExec, PLACEHOLDER, [reflectApply(stringSlice, template, [at])]) : null;
      if (placeholder !== null && hasOwn(values, placeholder[1])) {
        message += values[placeholder[1]];
        at += placeholder[0].length;
      } else {
        message += template[at];
        at += 1;
      }
    }
    return message;
  }

  /** Records a limit breach (as endProgram) with the limit's message, and returns the error to throw at the program. */
  function hitLimit(code, values) {
    return endProgram(code, limitMessage(code, values));
  }

  // ---- determinism: seeded Math.random, frozen Date --------------------------------------
  // sfc32 seeded through splitmix32: fast, good enough for programs, and reproducible on replay.
  // Seeded by `configure`; no code runs before then.
  let seedState = 0;
  function splitmix32() {
    seedState = (seedState + 0x9e3779b9) | 0;
    let z = seedState;
    z = mathImul(z ^ (z >>> 16), 0x85ebca6b);
    z = mathImul(z ^ (z >>> 13), 0xc2b2ae35);
    return (z ^ (z >>> 16)) >>> 0;
  }
  let a = 0;
  let b = 0;
  let c = 0;
  let d = 0;
  function seedRandom(seed) {
    seedState = seed >>> 0;
    a = splitmix32();
    b = splitmix32();
    c = splitmix32();
    d = splitmix32();
  }
  function random() {
    const t = (((a + b) | 0) + d) | 0;
    d = (d + 1) | 0;
    a = b ^ (b >>> 9);
    b = (c + (c << 3)) | 0;
    c = (c << 21) | (c >>> 11);
    c = (c + t) | 0;
    return (t >>> 0) / 4294967296;
  }
  defineProperty(Math, 'random', { value: random, writable: true, enumerable: false, configurable: true });

  // Set by `configure` to the program's clock.
  let frozenNow = 0;
  // `function Date` keeps `Date.name === 'Date'`; `new.target` keeps subclassing working.
  const FrozenDate = function Date(...args) {
    if (new.target === undefined) return reflectApply(dateToString, new RealDate(frozenNow), []);
    return reflectConstruct(RealDate, args.length === 0 ? [frozenNow] : args, new.target);
  };
  defineProperty(FrozenDate, 'length', { value: 7 });
  defineProperty(FrozenDate, 'prototype', { value: RealDate.prototype, writable: false });
  defineProperty(FrozenDate, 'now', { value: function now() { return frozenNow; }, writable: true, configurable: true });
  defineProperty(FrozenDate, 'parse', { value: RealDate.parse, writable: true, configurable: true });
  defineProperty(FrozenDate, 'UTC', { value: RealDate.UTC, writable: true, configurable: true });
  defineProperty(RealDate.prototype, 'constructor', { value: FrozenDate, writable: true, configurable: true });
  defineProperty(globalThis, 'Date', { value: FrozenDate, writable: true, configurable: true, enumerable: false });

  // Intl formatters read the real clock when given no date: pin them to the frozen one.
  const dateTimeFormatProto = Intl.DateTimeFormat.prototype;
  const formatGetter = Reflect.getOwnPropertyDescriptor(dateTimeFormatProto, 'format').get;
  defineProperty(dateTimeFormatProto, 'format', {
    configurable: true,
    get() {
      const format = reflectApply(formatGetter, this, []);
      return (date) => format(date === undefined ? frozenNow : date);
    },
  });
  const formatToParts = dateTimeFormatProto.formatToParts;
  defineProperty(dateTimeFormatProto, 'formatToParts', {
    configurable: true,
    writable: true,
    value: function formatToParts_(date) {
      return reflectApply(formatToParts, this, [date === undefined ? frozenNow : date]);
    },
  });

  // ---- memory the isolate's limit does not see -------------------------------------------
  // A resizable ArrayBuffer reserves its maximum up front and grows outside memoryLimit: the
  // constructor ignores `maxByteLength` and `resize` goes, so every buffer is fixed-length.
  const RealArrayBuffer = ArrayBuffer;
  const FixedArrayBuffer = function ArrayBuffer(length) {
    if (new.target === undefined) throw new TypeErrorCtor("Constructor ArrayBuffer requires 'new'");
    return reflectConstruct(RealArrayBuffer, [length], new.target);
  };
  defineProperty(FixedArrayBuffer, 'length', { value: 1 });
  defineProperty(FixedArrayBuffer, 'prototype', { value: RealArrayBuffer.prototype, writable: false });
  defineProperty(FixedArrayBuffer, 'isView', { value: RealArrayBuffer.isView, writable: true, configurable: true });
  defineProperty(RealArrayBuffer.prototype, 'constructor', { value: FixedArrayBuffer, writable: true, configurable: true });
  delete RealArrayBuffer.prototype.resize;
  defineProperty(globalThis, 'ArrayBuffer', { value: FixedArrayBuffer, writable: true, configurable: true, enumerable: false });

  // ---- garbage collection stays invisible -------------------------------------------------
  // A FinalizationRegistry callback runs whenever the collector decides, outside any step and
  // its time limit, and a WeakRef may empty: both would make a replay take another path. The
  // language lets an engine never call the callbacks and keep targets alive, so this one does.
  const InertFinalizationRegistry = class FinalizationRegistry {
    constructor(cleanup) {
      if (typeof cleanup !== 'function') throw new TypeErrorCtor('FinalizationRegistry: cleanup must be callable');
    }
    register(target) {
      if (target === null || (typeof target !== 'object' && typeof target !== 'function')) {
        throw new TypeErrorCtor('FinalizationRegistry.prototype.register: invalid target');
      }
    }
    unregister() {
      return false;
    }
  };
  const StrongWeakRef = class WeakRef {
    #target;
    constructor(target) {
      if (target === null || (typeof target !== 'object' && typeof target !== 'function')) throw new TypeErrorCtor('WeakRef: invalid target');
      this.#target = target;
    }
    deref() {
      return this.#target;
    }
  };
  for (const [name, value] of [['FinalizationRegistry', InertFinalizationRegistry], ['WeakRef', StrongWeakRef]]) {
    defineProperty(value.prototype, Symbol.toStringTag, { value: name, configurable: true });
    defineProperty(globalThis, name, { value, writable: true, configurable: true, enumerable: false });
  }

  // ---- globals that are not ECMAScript built-ins, or that leak timing, go ----------------
  // In `configure` (or `warm`, before it), not here: this runs as the prelude's snapshot is made,
  // and V8 adds to `Atomics` as it makes each context from a snapshot (with it gone, the whole
  // process aborts).
  const REMOVED_GLOBALS = ['console', 'Atomics', 'SharedArrayBuffer', 'WebAssembly'];

  let globalsRemoved = false;
  /** Removes REMOVED_GLOBALS from this context, once. */
  function removeGlobals() {
    if (globalsRemoved) return;
    for (const name of REMOVED_GLOBALS) delete globalThis[name];
    globalsRemoved = true;
  }

  // ---- text() and image() -----------------------------------------------------------------
  function appendOutput(chunk) {
    // Length in UTF-16 units never exceeds UTF-8 bytes; the host re-checks in bytes.
    if (output.length + chunk.length > limits.maxOutputBytes) {
      throw hitLimit('output_limit_exceeded', { __proto__: null, limit: limits.maxOutputBytes });
    }
    output += chunk;
  }

  function describeValue(value) {
    if (typeof value === 'string') return value;
    if (typeof value === 'bigint' || typeof value === 'symbol') return StringCtor(value);
    const json = jsonStringify(value);
    return typeof json === 'string' ? json : StringCtor(value);
  }

  function text(value) {
    appendOutput(describeValue(value));
  }

  const IMAGE_DETAILS = freeze({ __proto__: null, low: true, high: true, auto: true, original: true });
  function image(urlOrItem) {
    let url = urlOrItem;
    if (urlOrItem !== null && typeof urlOrItem === 'object') {
      url = urlOrItem.image_url;
      const detail = urlOrItem.detail;
      if (detail !== undefined && !(typeof detail === 'string' && IMAGE_DETAILS[detail] === true)) {
        throw new TypeErrorCtor('image(): detail must be one of "low", "high", "auto", "original"');
      }
    }
    if (
      typeof url !== 'string' ||
      !(reflectApply(stringStartsWith, url, ['data:image/']) || reflectApply(stringStartsWith, url, ['https://']))
    ) {
      throw new TypeErrorCtor('image() expects a data:image/… or https:// URL, or {image_url, detail}');
    }
    appendOutput('![image](' + url + ')');
  }

  // ---- tools ------------------------------------------------------------------------------
  function describeType(value) {
    if (value === null) return 'null';
    if (value === undefined) return 'undefined';
    if (isArray(value)) return 'an array';
    return typeof value === 'object' ? 'an object' : 'a ' + typeof value;
  }

  // ---- schema checks: strict parameters and output_schema ---------------------------------
  // The host compiles each schema with ajv into a standalone validator (a CommonJS module body);
  // they are evaluated here, before the program runs, with a `require` that knows only the
  // helper modules the host passes. A program that replaces the built-ins they use can fool
  // its own checks, never the host's: the host has arguments checked again by this prelude run
  // in a second context, where no program runs (checkArguments below; arguments_invalid).
  let schemaModules = { __proto__: null };
  const loadedModules = { __proto__: null };

  function evaluateModule(source) {
    const module = { exports: {} };
    reflectApply(new FunctionCtor('module', 'exports', 'require', source), undefined, [module, module.exports, requireModule]);
    return module.exports;
  }

  function requireModule(name) {
    if (loadedModules[name] === undefined) {
      if (typeof schemaModules[name] !== 'string') throw new ErrorCtor(`ptc-emulator: a validator required ${name}`);
      loadedModules[name] = evaluateModule(schemaModules[name]);
    }
    return loadedModules[name];
  }

  const DIGITS = /^[0-9]+$/;
  const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

  /** `root.a[0].b` for the JSON pointer `/a/0/b` (as runtime/tool-schemas.ts pathOf). */
  function pathOf(root, pointer) {
    let path = root;
    let segment = null;
    const flush = () => {
      if (segment === null) return;
      if (reflectApply(regexpExec, DIGITS, [segment]) !== null) path += '[' + segment + ']';
      else if (reflectApply(regexpExec, IDENTIFIER, [segment]) !== null) path += '.' + segment;
      else path += '[' + jsonStringify(segment) + ']';
    };
    for (let i = 0; i < pointer.length; i++) {
      const ch = pointer[i];
      if (ch === '/') {
        flush();
        segment = '';
      } else if (ch === '~' && (pointer[i + 1] === '0' || pointer[i + 1] === '1')) {
        segment += pointer[i + 1] === '0' ? '~' : '/';
        i++;
      } else {
        segment += ch;
      }
    }
    flush();
    return path;
  }

  /** The first violation of `value`, as a sentence naming the field (as runtime/tool-schemas.ts describeViolation); undefined when it conforms. */
  function violationOf(validate, value, root) {
    if (validate(value) === true) return undefined;
    const error = validate.errors[0];
    const where = pathOf(root, StringCtor(error.instancePath));
    const params = error.params;
    if (error.keyword === 'required') return `${where} is missing the required property '${StringCtor(params.missingProperty)}'`;
    if (error.keyword === 'additionalProperties') return `${where} has the property '${StringCtor(params.additionalProperty)}', which the schema does not allow`;
    if (error.keyword === 'enum') return `${where} must be one of ${jsonStringify(params.allowedValues)}`;
    return `${where} ${error.message === undefined ? 'does not match the schema' : error.message}`;
  }

  /** What a call sends: a function tool's arguments as JSON (an object), a custom tool's text as it is. */
  function serialiseInput(tool, args) {
    if (tool.text) {
      if (typeof args !== 'string') throw new TypeErrorCtor(`tools.${tool.id} expects one string of input, got ${describeType(args)}`);
      return args;
    }
    if (args === undefined) return '{}';
    if (args === null || typeof args !== 'object' || isArray(args)) {
      throw new TypeErrorCtor(`tools.${tool.id} expects an object of arguments, got ${describeType(args)}`);
    }
    let argsJson = jsonStringify(args);
    // A toJSON may turn the object into an array, a string or nothing: arguments are an object.
    if (typeof argsJson !== 'string' || argsJson[0] !== '{') {
      throw new TypeErrorCtor(`tools.${tool.id}: arguments must serialise to a JSON object`);
    }
    if (tool.nullDefaults !== undefined) {
      // Fields the call item always carries: absent ones are sent as null, so that the item
      // resent later gives back exactly these arguments.
      const filled = jsonParse(argsJson);
      for (let i = 0; i < tool.nullDefaults.length; i++) {
        const key = tool.nullDefaults[i];
        if (!hasOwn(filled, key)) defineProperty(filled, key, { value: null, enumerable: true, writable: true, configurable: true });
      }
      argsJson = jsonStringify(filled);
    }
    return argsJson;
  }

  function makeTool(tool) {
    // An arrow function: callable, not constructible, no own `prototype`.
    const call = (args) => {
      if (settled) return reflectApply(promiseReject, PromiseCtor, [new ErrorCtor('The program has ended')]);
      let argsJson;
      try {
        argsJson = serialiseInput(tool, args);
        if (argsJson.length > limits.maxArgumentBytes) {
          throw hitLimit('arguments_too_large', { __proto__: null, tool: tool.id, limit: limits.maxArgumentBytes });
        }
        if (tool.checkInput !== undefined) {
          // The JSON the call sends is what is checked, as the host checks it.
          const violation = violationOf(tool.checkInput, jsonParse(argsJson), 'arguments');
          if (violation !== undefined) throw new TypeErrorCtor(`tools.${tool.id}: ${violation}`);
        }
        if (nextSeq >= limits.maxCalls) {
          throw hitLimit('call_limit_exceeded', { __proto__: null, limit: limits.maxCalls });
        }
        if (size(pending) >= limits.maxCallsInFlight) {
          throw hitLimit('calls_in_flight_exceeded', { __proto__: null, limit: limits.maxCallsInFlight });
        }
      } catch (error) {
        return reflectApply(promiseReject, PromiseCtor, [error]);
      }
      const seq = nextSeq++;
      return new PromiseCtor((resolve, reject) => {
        reflectApply(mapSet, pending, [seq, { __proto__: null, resolve, reject, tool }]);
        reflectApply(mapSet, unreported, [seq, { __proto__: null, tool: tool.id, args: argsJson }]);
      });
    };
    defineProperty(call, 'name', { value: tool.keys[0] });
    return call;
  }

  const textTools = { __proto__: null };

  /**
   * Takes the program's configuration (SandboxConfig), once: seeds Math.random, sets the frozen
   * clock, evaluates the schema validators and installs `tools`, `text` and `image`. Run by
   * `start` (and, for the checker's context, by installSandbox), before any code of the program.
   */
  function configure(programConfig) {
    if (config !== null) throw new ErrorCtor('ptc-emulator: the sandbox is configured already');
    removeGlobals();
    config = programConfig;
    limits = config.limits;
    seedRandom(config.seed);
    frozenNow = config.clock;
    if (config.schemaModules !== undefined) schemaModules = config.schemaModules;
    for (const tool of config.tools) {
      if (tool.checkInput !== undefined) tool.checkInput = evaluateModule(tool.checkInput);
      if (tool.checkOutput !== undefined) tool.checkOutput = evaluateModule(tool.checkOutput);
    }
    const tools = { __proto__: null };
    const namespaces = new MapCtor();
    for (const tool of config.tools) {
      if (tool.text) textTools[tool.id] = true;
      const fn = makeTool(tool);
      let holder = tools;
      if (tool.namespaceKeys !== undefined) {
        // One object per namespace, under each of its keys.
        holder = reflectApply(mapGet, namespaces, [tool.namespaceKeys[0]]);
        if (holder === undefined) {
          holder = { __proto__: null };
          reflectApply(mapSet, namespaces, [tool.namespaceKeys[0], holder]);
          for (const key of tool.namespaceKeys) defineProperty(tools, key, { value: holder, enumerable: true });
        }
      }
      for (const key of tool.keys) defineProperty(holder, key, { value: fn, enumerable: true });
    }
    reflectApply(mapForEach, namespaces, [(holder) => freeze(holder)]);
    freeze(tools);

    for (const [name, value] of [['tools', tools], ['text', text], ['image', image]]) {
      defineProperty(globalThis, name, { value, writable: false, enumerable: false, configurable: false });
    }
  }

  // ---- outcome ----------------------------------------------------------------------------
  // Where the program's code sits in the AsyncFunction source: two wrapper lines above it and
  // the strict prefix before its first column.
  const BODY_LINE_OFFSET = 2;
  const LOCATION = /<anonymous>:(\d+):(\d+)/;

  function locate(stack) {
    if (typeof stack !== 'string') return '';
    const match = reflectApply(regexpExec, LOCATION, [stack]);
    if (match === null) return '';
    const line = NumberCtor(match[1]) - BODY_LINE_OFFSET;
    let column = NumberCtor(match[2]);
    if (line === 1) column -= STRICT_PREFIX.length;
    return line >= 1 ? ` (line ${line}, column ${column})` : '';
  }

  function describeThrown(value) {
    try {
      if (value !== null && (typeof value === 'object' || typeof value === 'function')) {
        const tag = reflectApply(objectPrototypeToString, value, []);
        if (tag === '[object Error]') {
          const name = StringCtor(value.name);
          const message = StringCtor(value.message);
          return (message === '' ? name : `${name}: ${message}`) + locate(value.stack);
        }
      }
      return 'Uncaught ' + describeValue(value);
    } catch {
      return 'Uncaught value that cannot be described';
    }
  }

  function finish(result) {
    if (settled) return;
    settled = true;
    outcome = result;
  }

  function start(code) {
    let body;
    try {
      body = new AsyncFunction(STRICT_PREFIX + code);
    } catch (error) {
      finish({ __proto__: null, status: 'failed', code: 'syntax_error', message: describeThrown(error) });
      return;
    }
    const running = reflectApply(body, undefined, []);
    // `then` looks up `constructor[Symbol.species]`, which the program can replace on
    // Promise.prototype: an own undefined constructor makes it use the intrinsic Promise.
    defineProperty(running, 'constructor', { value: undefined });
    reflectApply(promiseThen, running, [
      () => finish({ __proto__: null, status: 'completed', result: output }),
      (error) => finish({ __proto__: null, status: 'failed', code: 'program_threw', message: describeThrown(error) }),
    ]);
  }

  /**
   * The `warm` op, in a context made ahead of its program: removes the globals configure would,
   * and does once, on things of its own that nothing keeps, what `start` does (its payload is a
   * configuration of the host's own making, parsed as a start's is): makes tools, compiles and
   * runs an empty AsyncFunction, settles its promise, writes a reply. V8 sets up much of that on
   * first use in each isolate; done here, it is off the program's first step. Nothing of the
   * program's state changes: `config` stays unset, no call is made, no output written, and no code
   * but the prelude's own runs.
   */
  function warm(sample) {
    if (config !== null) throw new ErrorCtor('ptc-emulator: the sandbox is configured already');
    removeGlobals();
    const scratch = { __proto__: null };
    for (const tool of sample.config.tools) defineProperty(scratch, tool.keys[0], { value: makeTool(tool), enumerable: true });
    freeze(scratch);
    const running = reflectApply(new AsyncFunction(STRICT_PREFIX), undefined, []);
    defineProperty(running, 'constructor', { value: undefined });
    reflectApply(promiseThen, running, [() => undefined, () => undefined]);
    jsonStringify({ __proto__: null, state: 'settled', status: 'completed', result: '' });
  }

  /** Settles one pending call with its output: the string, or its parsed JSON for output_schema tools. */
  function deliverOne(seq, toolOutput, error) {
    const call = reflectApply(mapGet, pending, [seq]);
    if (call === undefined) return;
    reflectApply(mapDelete, pending, [seq]);
    if (typeof error === 'string') {
      // The call failed (an MCP tool's error, a denied approval): the program sees an Error.
      call.reject(new ErrorCtor(error));
      return;
    }
    if (!call.tool.parseJson) {
      call.resolve(toolOutput);
      return;
    }
    let value;
    try {
      value = jsonParse(toolOutput);
    } catch {
      call.reject(
        new TypeErrorCtor(`tools.${call.tool.id} declares output_schema but its output is not JSON: ${jsonStringify(truncate(toolOutput, 200))}`),
      );
      return;
    }
    let violation;
    try {
      violation = call.tool.checkOutput === undefined ? undefined : violationOf(call.tool.checkOutput, value, 'output');
    } catch (thrown) {
      // The check runs on built-ins the program may have replaced: what it throws is the
      // program's own doing, and this call's outcome, on a warm resume and a replay alike.
      call.reject(thrown);
      return;
    }
    if (violation !== undefined) {
      call.reject(new TypeErrorCtor(`tools.${call.tool.id} returned output that does not match its output_schema: ${violation}`));
      return;
    }
    call.resolve(value);
  }

  function deliver(outputs) {
    // Own properties only, as on replay: an answer without an error never picks one up from Object.prototype.
    for (let i = 0; i < outputs.length; i++) deliverOne(outputs[i].seq, outputs[i].output, hasOwn(outputs[i], 'error') ? outputs[i].error : undefined);
  }

  /** JSON with keys sorted at every depth: arguments that differ only in key order or spacing are equal. */
  function canonical(value) {
    if (value === null || typeof value !== 'object') return jsonStringify(value);
    if (isArray(value)) {
      let text = '[';
      for (let i = 0; i < value.length; i++) text += (i === 0 ? '' : ',') + canonical(value[i]);
      return text + ']';
    }
    const keys = reflectApply(arraySort, objectKeys(value), []);
    let text = '{';
    for (let i = 0; i < keys.length; i++) text += (i === 0 ? '' : ',') + jsonStringify(keys[i]) + ':' + canonical(value[keys[i]]);
    return text + '}';
  }

  function sameArguments(left, right) {
    if (left === right) return true;
    try {
      return canonical(jsonParse(left)) === canonical(jsonParse(right));
    } catch {
      return false;
    }
  }

  // ---- replies (GuestReply and CheckerReply in runtime/guest-protocol.ts) ----------------
  // Constant ones written out; the others serialised by hand or from null-prototype objects.
  const DONE = '{"state":"done"}';
  const FAULT = '{"state":"fault"}';
  const REPLAYING = '{"state":"replaying"}';
  const WITHHELD = '{"state":"withheld"}';
  const RESUME_LIMIT = '{"state":"resume_limit"}';
  const CONFORMS = '{"state":"conforms"}';

  /** Where the program stands: running with the calls it made since the last report, or settled. */
  function programState() {
    if (fatal !== null) {
      settled = true;
      return jsonStringify({ __proto__: null, state: 'settled', status: 'failed', code: fatal.code, message: fatal.message });
    }
    if (settled) {
      if (outcome.status === 'completed') {
        return jsonStringify({ __proto__: null, state: 'settled', status: 'completed', result: outcome.result });
      }
      return jsonStringify({
        __proto__: null,
        state: 'settled',
        status: 'failed',
        code: outcome.code,
        message: truncate(outcome.message, MAX_ERROR_MESSAGE),
      });
    }
    // Objects above have no prototype and calls are serialised by hand: JSON.stringify would
    // otherwise consult a `toJSON` the program can define on Object.prototype or Array.prototype.
    let calls = '';
    reflectApply(mapForEach, unreported, [
      (call, seq) => {
        calls += (calls === '' ? '' : ',') + '{"seq":' + seq + ',"tool":' + jsonStringify(call.tool) + ',"args":' + jsonStringify(call.args) + '}';
      },
    ]);
    reflectApply(mapClear, unreported, []);
    return '{"state":"running","inFlight":' + size(pending) + ',"calls":[' + calls + ']}';
  }

  function diverge(message) {
    endProgram('replay_diverged', message);
    return programState();
  }

  /**
   * The `report` op, asked whenever the program is idle. While the calls it has just made were
   * recorded by an earlier run, answers them from the record (the isolate runs on as this call
   * returns) and replies `replaying`; otherwise replies where the program stands
   * (programState). A replay that makes other calls than the recorded run, or fewer, has
   * diverged.
   */
  function report() {
    if (fatal === null && !settled) {
      let first = -1;
      reflectApply(mapForEach, unreported, [(call, seq) => { if (first < 0) first = seq; }]);
      if (first >= 0 && first < recordedCount) {
        // The batch is checked against the record first, without running anything of the program.
        let mismatch = '';
        let withheld = false;
        let missing = -1;
        reflectApply(mapForEach, unreported, [
          (call, seq) => {
            if (mismatch !== '') return;
            if (seq >= recordedCount) {
              mismatch = `call ${seq} (tools.${call.tool}), made in the same batch as recorded calls: the recorded run made only ${recordedCount} calls by then`;
              return;
            }
            const expected = entries[seq];
            if (expected === undefined) {
              if (missing < 0) missing = seq;
              return;
            }
            // A custom tool's text is compared as it is; a function's arguments as canonical JSON.
            const same = textTools[call.tool] === true ? expected.args === call.args : sameArguments(expected.args, call.args);
            if (expected.tool !== call.tool || !same) {
              mismatch = `call ${seq}, tools.${call.tool}(${truncate(call.args, 200)}), where the recorded run made tools.${expected.tool}(${truncate(expected.args, 200)})`;
              return;
            }
            // Own property only: a program that sets Object.prototype.withheld must not stop its replay.
            if (hasOwn(expected, 'withheld')) withheld = true;
          },
        ]);
        // The record's next part is not in yet: the host hands it in, then asks again.
        if (mismatch === '' && missing >= 0) return '{"state":"needs_answers","from":' + missing + '}';
        if (mismatch !== '') return diverge(`The replay diverged at ${mismatch}. Did an earlier tool output change since the program first received it?`);
        // The host withheld an answer of this batch (over its size limit): none of the batch is
        // delivered, as a live run would have ended before delivering it; the host ends the program.
        if (withheld) return WITHHELD;
        // The live run could not be resumed past its limit: the batch is not delivered either.
        if (replayedBatches + 1 > limits.maxResumes) return RESUME_LIMIT;
        replayedBatches += 1;
        // The batch leaves `unreported` before anything of it runs: delivering can run program
        // code (a getter, a thenable's `then`, an output_schema validator's globals), and a call
        // made then belongs to the next batch, as in a live run; Map.forEach would visit it here.
        const batch = new MapCtor();
        reflectApply(mapForEach, unreported, [(call, seq) => reflectApply(mapSet, batch, [seq, call])]);
        reflectApply(mapClear, unreported, []);
        // Settling a promise only queues its reactions: the program runs on once this returns,
        // so answering calls one by one here is the same as answering the batch at once.
        reflectApply(mapForEach, batch, [
          (call, seq) => {
            const entry = entries[seq];
            entries[seq] = undefined;
            // Own properties only: an answer without an error never picks one up from Object.prototype.
            deliverOne(seq, entry.output, hasOwn(entry, 'error') ? entry.error : undefined);
          },
        ]);
        return REPLAYING;
      }
    }
    if (nextSeq < recordedCount && fatal === null && (settled || size(unreported) === 0)) {
      return diverge(`The replay diverged at call ${nextSeq}: the program ${settled ? 'ended' : 'stopped making calls'} after ${nextSeq} calls, but the recorded run made ${recordedCount}`);
    }
    return programState();
  }

  // isolated-vm throws a promise rejection nothing handled out of whichever call was running
  // when the microtasks ran, in place of its result. `dispatch` itself never throws and keeps
  // its last reply to each op, so the host can tell such a rejection from a fault and ask for
  // that op's reply again (the `repeat` op, naming it): by then the host may have sent the next
  // op already (a `report` queued right behind each step's op).
  const lastReplies = { __proto__: null };
  /**
   * The host's check of a call's arguments against its tool's strict parameters, run in a
   * context of its own where no program ever ran (so every built-in the validator uses is
   * pristine), inside the isolate (so the program's time limits bound it: a schema `pattern`
   * that backtracks without end on the program's arguments costs the program, never the host).
   * Checks a batch's calls in order: replies `conforms` when all do, else `violation` with the
   * index of the first that does not and what it breaks.
   */
  function checkArguments(calls) {
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index];
      let violation = 'names no strict tool of this program';
      for (const tool of config.tools) {
        if (tool.id !== call.tool) continue;
        violation = tool.checkInput === undefined ? undefined : violationOf(tool.checkInput, jsonParse(call.args), 'arguments');
        break;
      }
      if (violation !== undefined) return jsonStringify({ __proto__: null, state: 'violation', index, violation });
    }
    return CONFORMS;
  }

  /** The ops (GuestOp and CheckerOp in runtime/guest-protocol.ts): each one's name, and its payload as JSON. */
  return function dispatch(op, payloadJson) {
    if (op === 'repeat') {
      const last = lastReplies[payloadJson];
      return typeof last === 'string' ? last : FAULT;
    }
    let reply = FAULT;
    try {
      const payload = jsonParse(payloadJson);
      if (op === 'check') reply = checkArguments(payload);
      else if (op === 'configure') {
        // The checker's context: its configuration alone, since it runs no program.
        configure(payload);
        reply = DONE;
      }
      else if (op === 'answers') {
        loadEntries(payload);
        reply = DONE;
      } else if (op === 'start') {
        // The program's configuration, the record of a replay (its first part), then the code:
        // one call into the isolate for all three.
        configure(payload.config);
        if (payload.record !== undefined) {
          recordedCount = payload.record.count;
          loadEntries(payload.record.entries);
        }
        start(payload.code);
        reply = DONE;
      } else if (op === 'warm') {
        warm(payload);
        reply = DONE;
      } else if (op === 'deliver') {
        deliver(payload);
        reply = DONE;
      } else if (op === 'report') reply = report();
    } catch {
      reply = FAULT;
    }
    // Keyed by the op's name as JSON, as `repeat` names it: no parse there, so no throw.
    lastReplies[jsonStringify(op)] = reply;
    return reply;
  };
});
