import ivm from 'isolated-vm';

/**
 * The floors: what the same work costs written the simplest way with plain isolated-vm, with none
 * of the emulator's sandbox hardening, limits, polling protocol or validation. A case's ratio
 * against its floor is the price of everything the emulator adds on top of isolated-vm itself.
 *
 * The memory limit matches the runtime's default (`memoryMb: 64`) so both pay for the same heap.
 */
const MEMORY_LIMIT_MB = 64;

/** Host tools as the floor sees them: JSON arguments in, a JSON-serialisable value out. */
export type BareTools = Readonly<Record<string, (args: { sku: string }) => unknown>>;

/** Floor for the cold start: an isolate and a context, created and thrown away. */
export async function bareIsolateAndContext(): Promise<void> {
  const isolate = new ivm.Isolate({ memoryLimit: MEMORY_LIMIT_MB });
  try {
    await isolate.createContext();
  } finally {
    isolate.dispose();
  }
}

/**
 * Floor for the seed program: a fresh isolate, `tools.<name>(args)` as guest functions that call
 * one async host function through an `ivm.Reference` (each call is its own promise, so the
 * program's `Promise.all` really runs both in parallel), JSON strings in both directions as
 * with `output_schema`, and `text()` collecting the result, which is returned once the
 * program's promise settles. Then the isolate is disposed.
 */
export async function bareRunProgram(code: string, tools: BareTools): Promise<string> {
  const isolate = new ivm.Isolate({ memoryLimit: MEMORY_LIMIT_MB });
  try {
    const context = await isolate.createContext();
    // Strings only cross the boundary: the host parses the arguments and stringifies the output.
    const callTool = async (name: string, argsJson: string): Promise<string> => {
      const run = tools[name];
      if (!run) throw new Error(`Unknown tool: ${name}`);
      return JSON.stringify(await run(JSON.parse(argsJson) as { sku: string }));
    };
    await context.global.set('callTool', new ivm.Reference(callTool));
    const source = `
      const tools = {};
      for (const name of ${JSON.stringify(Object.keys(tools))}) {
        tools[name] = (args) => callTool.apply(undefined, [name, JSON.stringify(args)], { result: { promise: true } }).then(JSON.parse);
      }
      let output = '';
      const text = (value) => { output += typeof value === 'string' ? value : JSON.stringify(value); };
      (async () => {
${code}
      })().then(() => output);`;
    // `promise: true` makes the host wait for the program's promise and copy its string out.
    const result = await context.eval(source, { promise: true, copy: true });
    return String(result);
  } finally {
    isolate.dispose();
  }
}
