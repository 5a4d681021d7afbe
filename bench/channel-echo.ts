// The far end of the bare channel that bench/worker-hop.ts times beside a worker (channel-floor.ts):
// a process forked as a worker is, on Node's IPC channel with the same serialization, that runs
// no program. Its first message is the script (the replies a real worker gave to one iteration of
// requests, in order); it answers every message after it with the script's next reply, under that
// message's id, from the first again after the last.

interface Script {
  readonly script: readonly Record<string, unknown>[];
}

let replies: readonly Record<string, unknown>[] = [];
let next = 0;

process.on('message', (message: Script | { readonly id: number }) => {
  if ('script' in message) {
    replies = message.script;
    next = 0;
    process.send?.({ scripted: replies.length });
    return;
  }
  const reply = replies[next];
  next = (next + 1) % replies.length;
  process.send?.({ ...reply, id: message.id });
});

// The bench going away ends the echo.
process.on('disconnect', () => process.exit(0));
