// The inspector page: reads GET /v1/emulator/journal and draws conversations. Everything it
// shows came from clients and programs and is hostile by design: the DOM is built with
// createElement and textContent only, never from markup (the page's CSP backs this up).
'use strict';

const KEY_STORAGE = 'ptc-inspector-key';
const RECONNECT_MS = 1000;
const KEYWORDS = new Set([
  'await',
  'async',
  'const',
  'let',
  'var',
  'function',
  'return',
  'if',
  'else',
  'for',
  'while',
  'of',
  'in',
  'new',
  'try',
  'catch',
  'throw',
  'true',
  'false',
  'null',
  'undefined',
]);

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (name === 'class') node.className = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return node;
}

function headers() {
  const key = sessionStorage.getItem(KEY_STORAGE);
  return key ? { authorization: `Bearer ${key}` } : {};
}

/** Code with keywords, strings and comments in spans: tokens become text nodes, never markup. */
function highlighted(code) {
  const pre = el('pre', { class: 'code' });
  const token = /(\/\/[^\n]*|\/\*[\s\S]*?\*\/|`(?:\\[\s\S]|[^`\\])*`|'(?:\\.|[^'\\\n])*'|"(?:\\.|[^"\\\n])*"|\b[A-Za-z_$][\w$]*\b)/g;
  let last = 0;
  for (const match of code.matchAll(token)) {
    if (match.index > last) pre.append(document.createTextNode(code.slice(last, match.index)));
    const text = match[0];
    if (text.startsWith('//') || text.startsWith('/*')) pre.append(el('span', { class: 'tok-comment' }, text));
    else if (/^[`'"]/.test(text)) pre.append(el('span', { class: 'tok-string' }, text));
    else if (KEYWORDS.has(text)) pre.append(el('span', { class: 'tok-keyword' }, text));
    else pre.append(document.createTextNode(text));
    last = match.index + text.length;
  }
  if (last < code.length) pre.append(document.createTextNode(code.slice(last)));
  return pre;
}

function pretty(text) {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return String(text);
  }
}

/** Groups entries into conversations: linked by previous_response_id or a shared program. */
function conversationsOf(entries) {
  const parent = entries.map((_, index) => index);
  const find = (index) => (parent[index] === index ? index : (parent[index] = find(parent[index])));
  const union = (a, b) => {
    parent[find(a)] = find(b);
  };
  const byResponse = new Map();
  const byProgram = new Map();
  entries.forEach((entry, index) => {
    if (entry.response_id) {
      if (byResponse.has(entry.response_id)) union(index, byResponse.get(entry.response_id));
      else byResponse.set(entry.response_id, index);
    }
    for (const trace of entry.programs ?? []) {
      if (byProgram.has(trace.program)) union(index, byProgram.get(trace.program));
      else byProgram.set(trace.program, index);
    }
  });
  entries.forEach((entry, index) => {
    const previous = entry.request?.previous_response_id;
    if (typeof previous === 'string' && byResponse.has(previous)) union(index, byResponse.get(previous));
  });
  const groups = new Map();
  entries.forEach((entry, index) => {
    const root = find(index);
    if (!groups.has(root)) groups.set(root, []);
    groups.get(root).push(entry);
  });
  // Entries come newest first; a timeline reads oldest first, conversations newest first.
  return [...groups.values()].map((group) => group.slice().reverse());
}

function inputItems(entry) {
  const input = entry.request?.input;
  return Array.isArray(input) ? input : [];
}

function outputItems(entry) {
  const output = entry.response?.output;
  return Array.isArray(output) ? output : [];
}

function renderRequestPart(entry) {
  const part = el('div', { class: 'request' });
  const sent = inputItems(entry).filter(
    (item) => item && typeof item === 'object' && String(item.type ?? '').endsWith('_output') && item.type !== 'program_output',
  );
  if (sent.length > 0) {
    const list = el('ul', { class: 'sent-outputs' });
    for (const item of sent)
      list.append(
        el(
          'li',
          { class: 'sent-output' },
          el('span', { class: 'label' }, `output for ${item.call_id}: `),
          el('pre', {}, pretty(typeof item.output === 'string' ? item.output : JSON.stringify(item.output))),
        ),
      );
    part.append(el('h4', {}, `Outputs the client sent (${sent.length})`), list);
  }
  return part;
}

function renderPrograms(entry) {
  const part = el('div', { class: 'programs' });
  const code = new Map(
    outputItems(entry)
      .filter((item) => item.type === 'program')
      .map((item) => [item.call_id, item.code]),
  );
  for (const trace of entry.programs ?? []) {
    const kind = trace.outcome === 'paused' ? 'pause' : trace.outcome === 'incomplete' ? 'failed' : 'completed';
    const how = trace.path === 'start' ? 'started' : `resumed (${trace.path})`;
    const box = el(
      'div',
      { class: `program ${kind}`, 'data-program': trace.program },
      el(
        'div',
        { class: 'program-head' },
        el('strong', {}, `program ${trace.program}`),
        ` ${how} → `,
        el('span', { class: `outcome outcome-${trace.outcome}` }, trace.outcome),
        trace.code ? el('span', { class: 'error-code' }, trace.code) : null,
      ),
      el('div', { class: 'stats' }, `cpu ${trace.stats?.cpuTimeMs ?? '?'} ms · steps ${trace.stats?.steps ?? '?'} · calls ${trace.stats?.calls ?? '?'}`),
    );
    if (code.has(trace.program)) box.append(highlighted(code.get(trace.program)));
    part.append(box);
  }
  const calls = outputItems(entry).filter((item) => item.type === 'function_call');
  if (calls.length > 0) {
    const list = el('ul', { class: 'calls' });
    for (const call of calls)
      list.append(el('li', { class: 'call' }, el('span', { class: 'call-name' }, call.name), el('pre', { class: 'call-args' }, pretty(call.arguments))));
    part.append(el('h4', {}, `Batch of calls (${calls.length})`), list);
  }
  for (const item of outputItems(entry).filter((candidate) => candidate.type === 'program_output')) {
    part.append(
      el(
        'div',
        { class: `program-output ${item.status}` },
        el('h4', {}, `program_output ${item.call_id} (${item.status})`),
        el('pre', {}, String(item.result)),
      ),
    );
  }
  for (const item of outputItems(entry).filter((candidate) => candidate.type === 'message')) {
    const text = (Array.isArray(item.content) ? item.content : []).map((content) => content.text ?? '').join('');
    part.append(el('div', { class: 'message' }, el('h4', {}, 'message'), el('pre', {}, text)));
  }
  return part;
}

function renderRaw(entry) {
  if (!entry.response_id) return null;
  const details = el('details', { class: 'raw' }, el('summary', {}, 'raw JSON'));
  const link = el(
    'a',
    { href: `/v1/responses/${encodeURIComponent(entry.response_id)}`, target: '_blank', rel: 'noopener noreferrer' },
    `/v1/responses/${entry.response_id}`,
  );
  // A new tab sends no Authorization header: with a key set, the link opens what the page
  // fetched with it instead, as a JSON document of its own.
  link.addEventListener('click', async (event) => {
    if (!sessionStorage.getItem(KEY_STORAGE)) return;
    event.preventDefault();
    const reply = await fetch(link.getAttribute('href'), { headers: headers() });
    const url = URL.createObjectURL(new Blob([await reply.text()], { type: 'application/json' }));
    window.open(url, '_blank', 'noopener');
    setTimeout(() => URL.revokeObjectURL(url), 60_000);
  });
  const pre = el('pre', {});
  details.append(link, pre);
  details.addEventListener('toggle', async () => {
    if (!details.open || pre.textContent) return;
    const reply = await fetch(link.getAttribute('href'), { headers: headers() });
    pre.textContent = JSON.stringify(await reply.json(), null, 2);
  });
  return details;
}

/** A webhook delivery attempt: which event went where, and how it went. */
function renderWebhook(webhook) {
  const retry = webhook.retry_in_ms === undefined ? '' : `, next attempt in ${webhook.retry_in_ms} ms`;
  return el(
    'div',
    { class: `webhook webhook-${webhook.outcome}` },
    'webhook ',
    el('span', { class: 'webhook-event' }, webhook.event_type),
    ` (${webhook.event_id}, ${JSON.stringify(webhook.data)}) to ${webhook.endpoint_id}: attempt ${webhook.attempt}, ${webhook.outcome}${retry}`,
    webhook.error ? ` (${webhook.error})` : '',
  );
}

function renderEntry(entry) {
  const usage = entry.response?.usage;
  const item = el(
    'li',
    { class: `entry status-${entry.status}` },
    el(
      'div',
      { class: 'entry-head' },
      el('span', { class: 'method' }, entry.method),
      ' ',
      el('span', { class: 'path' }, entry.path),
      ' ',
      el('span', { class: 'http-status' }, String(entry.status)),
      entry.response_status ? el('span', { class: 'response-status' }, entry.response_status) : null,
      entry.model ? el('span', { class: 'model' }, entry.model) : null,
      el('span', { class: 'at' }, entry.at),
    ),
    entry.error ? el('div', { class: 'error' }, el('span', { class: 'error-code' }, entry.error.code), ` ${entry.error.message}`) : null,
    entry.webhook ? renderWebhook(entry.webhook) : null,
    entry.client_loop?.rejected
      ? el('div', { class: 'violation' }, 'client-loop violation: ', el('span', { class: 'error-code' }, entry.client_loop.rejected))
      : null,
    ...(entry.client_loop?.tolerated ?? []).map((note) => el('div', { class: 'violation tolerated' }, `tolerated: ${note}`)),
    usage ? el('div', { class: 'usage' }, `usage: input ${usage.input_tokens} · output ${usage.output_tokens} · total ${usage.total_tokens}`) : null,
    entry.store === false ? el('div', { class: 'note' }, 'store: false: no content kept') : null,
    renderRequestPart(entry),
    renderPrograms(entry),
    renderRaw(entry),
  );
  return item;
}

function codesOf(entry) {
  return [entry.error?.code, entry.client_loop?.rejected, ...(entry.programs ?? []).map((trace) => trace.code)].filter(Boolean);
}

function fillFilter(select, values) {
  const chosen = select.value;
  while (select.options.length > 1) select.remove(1);
  for (const value of [...new Set(values)].sort()) select.append(el('option', { value }, value));
  select.value = chosen;
}

let lastText = '';
async function refresh() {
  const notice = document.getElementById('notice');
  const reply = await fetch('/v1/emulator/journal?limit=10000', { headers: headers() });
  const text = await reply.text();
  if (!reply.ok) {
    notice.textContent = `journal: HTTP ${reply.status}${reply.status === 401 ? ' (enter the API key)' : ''}`;
    return;
  }
  if (text === lastText) return;
  lastText = text;
  notice.textContent = '';
  const entries = JSON.parse(text).data;
  const status = document.getElementById('filter-status');
  const code = document.getElementById('filter-code');
  const model = document.getElementById('filter-model');
  fillFilter(
    status,
    entries.map((entry) => entry.response_status ?? String(entry.status)),
  );
  fillFilter(code, entries.flatMap(codesOf));
  fillFilter(model, entries.map((entry) => entry.model).filter(Boolean));
  const main = document.getElementById('conversations');
  main.replaceChildren();
  // `#program=<call_id>` (the explore report links so): only the conversation of that program.
  const program = new URLSearchParams(location.hash.slice(1)).get('program');
  for (const conversation of conversationsOf(entries)) {
    const matches = (entry) =>
      (!status.value || (entry.response_status ?? String(entry.status)) === status.value) &&
      (!code.value || codesOf(entry).includes(code.value)) &&
      (!model.value || entry.model === model.value);
    if (!conversation.some(matches)) continue;
    if (program && !conversation.some((entry) => (entry.programs ?? []).some((trace) => trace.program === program))) continue;
    const first = conversation[0];
    const section = el(
      'section',
      { class: 'conversation' },
      el('h2', {}, `Conversation from ${first.at} (${conversation.length} requests)`),
      el('ol', { class: 'timeline' }, ...conversation.map(renderEntry)),
    );
    main.append(section);
  }
  document.body.setAttribute('data-loaded', String(entries.length));
}

/**
 * Live updates: reads GET /v1/emulator/journal/events (Server-Sent Events, through fetch so that
 * it can send the key, which EventSource cannot) and reads the journal again after each event.
 * When the stream ends (the server ends a stream whose client falls behind), it reconnects.
 */
async function follow() {
  let pending = false;
  const redraw = () => {
    if (pending) return;
    pending = true;
    queueMicrotask(() => {
      pending = false;
      refresh().catch(() => {});
    });
  };
  try {
    const reply = await fetch('/v1/emulator/journal/events', { headers: headers() });
    if (reply.ok && reply.body) {
      const reader = reply.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffered = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffered += value;
        const events = buffered.split('\n\n');
        buffered = events.pop() ?? '';
        if (events.some((event) => event.startsWith('event: journal.entry'))) redraw();
      }
    }
  } catch {
    // The server went away or the key is wrong: try again shortly.
  }
  setTimeout(() => {
    redraw();
    follow();
  }, RECONNECT_MS);
}

function rerender() {
  lastText = '';
  refresh().catch((error) => (document.getElementById('notice').textContent = String(error)));
}

document.addEventListener('DOMContentLoaded', () => {
  const input = document.getElementById('api-key');
  input.value = sessionStorage.getItem(KEY_STORAGE) ?? '';
  document.getElementById('key-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY_STORAGE, input.value);
    rerender();
  });
  for (const id of ['filter-status', 'filter-code', 'filter-model']) document.getElementById(id).addEventListener('change', rerender);
  document.getElementById('refresh').addEventListener('click', rerender);
  window.addEventListener('hashchange', rerender);
  rerender();
  follow();
});
