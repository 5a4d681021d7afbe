// The far end of the bench's bare channel (channel-floor.ts): a process forked as a worker is,
// that runs no program. Its first message is the script, one iteration's steps in order, each
// the request a pool sends for it and the reply a worker gave. It answers every message after
// that with the next step's reply, under the message's id, from the first again after the last;
// a message that is not that step's request (another kind, a `continue` of other calls or
// answers) ends it with code 2, and the bench fails, rather than timing a channel that carried
// something else.

interface Step {
  readonly request: { readonly kind: string; readonly calls?: number; readonly answers?: number };
  readonly reply: Record<string, unknown>;
}

interface Request {
  readonly id: number;
  readonly kind: string;
  readonly calls?: number;
  readonly answers?: readonly unknown[];
}

let script: readonly Step[] = [];
let next = 0;

function refuse(reason: string): never {
  process.stderr.write(`bench channel echo: ${reason}\n`);
  process.exit(2);
}

process.on('message', (message: { readonly script: readonly Step[] } | Request) => {
  if ('script' in message) {
    if (message.script.length === 0) refuse('an empty script');
    script = message.script;
    next = 0;
    process.send?.({ scripted: script.length });
    return;
  }
  const { request, reply } = script[next]!;
  if (message.kind !== request.kind || message.calls !== request.calls || message.answers?.length !== request.answers) {
    refuse(
      `step ${next} of the script is a ${request.kind} (${JSON.stringify(request)}), got a ${message.kind} of ${message.calls} calls and ${message.answers?.length} answers`,
    );
  }
  next = (next + 1) % script.length;
  process.send?.({ ...reply, id: message.id });
});

// The bench going away ends the echo.
process.on('disconnect', () => process.exit(0));
