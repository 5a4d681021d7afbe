import { existsSync, mkdirSync } from 'node:fs';
import { createServer } from 'node:http';
import { type AddressInfo, connect } from 'node:net';
import { fileURLToPath } from 'node:url';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_EVENT_STREAMS } from '../server/api/inspector/journal-events.ts';
import { agentLoop } from './support/agent-loop.ts';
import { inlineProgram, programTools } from './support/programs.ts';
import { startServer, type RunningServer } from './support/server.ts';

// The inspector page (/inspector) as a person sees it: a real headless Chromium over a real
// listening server, with conversations driven through the openai SDK.

const CHROMIUM = process.env.PTC_TEST_CHROMIUM ?? '/usr/bin/chromium';
const found = existsSync(CHROMIUM);
if (!found) console.warn(`test/inspector.test.ts: no Chromium at ${CHROMIUM}; the inspector's browser tests are skipped (CI installs it: .ci/run).`);

const API_KEY = 'inspector-test-key';
const PAUSING = 'const a = await tools.get_a({ n: 1 }); const b = await tools.get_b({ n: 2 }); text(`${a}+${b}`);';
const HOSTILE_CODE =
  'const label = "<img src=x onerror=window.__pwned=1>"; const out = await tools.get_a({ html: "</script><script>window.__pwned=2</script>" }); text(label + out);';
const HOSTILE_OUTPUT = '</script><script>window.__pwned=3</script><img src=x onerror="window.__pwned=4">';
const OVER_LIMIT = 'await tools.get_a({}); await tools.get_a({}); await tools.get_a({});';

describe.skipIf(!found)('the inspector in a browser', () => {
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  const dialogs: string[] = [];

  beforeAll(async () => {
    server = await startServer({ config: { apiKey: API_KEY, limits: { maxCalls: 2 } } });
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
    page = await browser.newPage();
    page.on('dialog', (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await page.setViewport({ width: 1200, height: 1400 });
  });
  afterAll(async () => {
    // However the tests ended: the browser's processes, then the server.
    await browser?.close();
    await server?.close();
  });

  const origin = (): string => server.baseURL.replace(/\/v1$/, '');

  it('serves the page without a key, with a strict CSP, while the journal still needs the key', async () => {
    const reply = await fetch(`${origin()}/inspector`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get('content-security-policy')).toContain("script-src 'self'");
    expect(reply.headers.get('content-security-policy')).toContain("default-src 'none'");
    expect((await fetch(`${server.baseURL}/emulator/journal`)).status).toBe(401);
  });

  it('shows a conversation that paused twice, one over its calls limit, and hostile code and outputs as text', async () => {
    const paused = await agentLoop(
      server.client,
      { model: 'ptc-emulator', input: inlineProgram(PAUSING), tools: programTools('get_a', 'get_b') },
      { functions: { get_a: () => 'alpha', get_b: () => 'beta' } },
      { store: true },
    );
    expect(paused.text).toBe('alpha+beta');
    await agentLoop(
      server.client,
      { model: 'ptc-emulator', input: inlineProgram(OVER_LIMIT), tools: programTools('get_a') },
      { functions: { get_a: () => 'again' } },
      { store: true },
    );
    await agentLoop(
      server.client,
      { model: 'ptc-emulator', input: inlineProgram(HOSTILE_CODE), tools: programTools('get_a') },
      { functions: { get_a: () => HOSTILE_OUTPUT } },
      { store: true },
    );

    await page.goto(`${origin()}/inspector`);
    await page.type('#api-key', API_KEY);
    await page.click('#key-form button');
    await page.waitForSelector('.conversation');
    const text = await page.$eval('#conversations', (node) => node.textContent ?? '');

    // The pausing conversation: both batches of calls, the outputs sent back, the pauses and the resumes.
    expect(text).toContain('get_a');
    expect(text).toContain('get_b');
    expect(text).toContain('"n": 1');
    expect(text).toContain('output for');
    expect(text).toContain('alpha+beta');
    expect(text).toMatch(/resumed \((warm|replay)\)/);
    const outcomes = await page.$$eval('.outcome', (nodes) => nodes.map((node) => node.textContent));
    expect(outcomes.filter((outcome) => outcome === 'paused').length).toBeGreaterThanOrEqual(3);

    // The program over its calls limit: its error code.
    const codes = await page.$$eval('.error-code', (nodes) => nodes.map((node) => node.textContent));
    expect(codes).toContain('call_limit_exceeded');

    // Hostile code and outputs: shown as text, nothing injected, nothing run.
    expect(text).toContain('<img src=x onerror=window.__pwned=1>');
    expect(text).toContain(HOSTILE_OUTPUT);
    expect(await page.$$('#conversations img')).toHaveLength(0);
    expect(await page.$$('#conversations script')).toHaveLength(0);
    expect(await page.evaluate('window.__pwned')).toBeUndefined();
    expect(dialogs).toEqual([]);

    // Filters: the error code narrows the page to the conversation that hit the limit.
    await page.select('#filter-code', 'call_limit_exceeded');
    await page.waitForFunction("document.querySelectorAll('.conversation').length === 1");
    expect(await page.$eval('#conversations', (node) => node.textContent ?? '')).not.toContain('alpha+beta');
    await page.select('#filter-code', '');
    await page.waitForFunction("document.querySelectorAll('.conversation').length === 3");

    // `#program=<call_id>` (the explore report's links): that program's conversation alone.
    const program = paused.responses[0]!.output.find((item) => item.type === 'program')!.call_id;
    await page.evaluate(`location.hash = ${JSON.stringify(`program=${program}`)}`);
    await page.waitForFunction("document.querySelectorAll('.conversation').length === 1");
    expect(await page.$eval('#conversations', (node) => node.textContent ?? '')).toContain('alpha+beta');
    await page.evaluate("location.hash = ''");
    await page.waitForFunction("document.querySelectorAll('.conversation').length === 3");

    if (process.env.PTC_INSPECTOR_SCREENSHOT) {
      const docs = fileURLToPath(new URL('../docs/', import.meta.url));
      mkdirSync(docs, { recursive: true });
      await page.screenshot({ path: `${docs}inspector.png`, fullPage: false });
    }
  });

  it('updates live while a conversation runs', async () => {
    const before = await page.$$eval('.conversation', (nodes) => nodes.length);
    await server.client.responses.create({ model: 'ptc-emulator', input: 'live update marker', store: true });
    await page.waitForFunction(`document.querySelectorAll('.conversation').length === ${before + 1}`);
    expect(await page.$eval('#conversations', (node) => node.textContent ?? '')).toContain('/v1/responses');
  });

  it("shows a background response's webhook deliveries in its conversation", async () => {
    const receiver = createServer((_request, reply) => reply.end());
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks`;
      await server.client.webhooks.create({ name: 'inspector', url, event_types: ['response.completed'] });
      const response = await server.client.responses.create({ model: 'ptc-emulator', input: 'webhook marker', background: true });
      await page.waitForFunction(
        `[...document.querySelectorAll('.webhook')].some((node) => node.textContent.includes(${JSON.stringify(response.id)}) && node.textContent.includes('delivered'))`,
      );
      const text = await page.$$eval('.webhook', (nodes) => nodes.map((node) => node.textContent ?? '').join('\n'));
      expect(text).toContain('response.completed');
      // In the conversation of the response it tells of.
      const sameSection = await page.$$eval(
        '.conversation',
        (sections, id) =>
          sections.some(
            (section) =>
              section.querySelector('.webhook') && (section.textContent ?? '').includes('/v1/responses') && (section.textContent ?? '').includes(id as string),
          ),
        response.id,
      );
      expect(sameSection).toBe(true);
    } finally {
      receiver.closeAllConnections();
      await new Promise((resolve) => receiver.close(resolve));
    }
  });

  // Last: the fetches it makes are journaled too, and change the conversations the page counts.
  it("opens a response's raw JSON in a new tab with the key the page was given", async () => {
    // The page redraws as the journal grows (its own fetches are journaled): a redraw between
    // opening the details and clicking the link replaces them, and the click is tried again.
    const opened = browser.waitForTarget((target) => target.url().startsWith('blob:'), { timeout: 20_000 });
    let href = '';
    for (let attempt = 0; ; attempt++) {
      try {
        await page.click('details.raw summary');
        href = await page.$eval('details.raw[open] a', (node) => {
          (node as unknown as { click(): void }).click();
          return node.getAttribute('href') ?? '';
        });
        break;
      } catch (error) {
        if (attempt >= 10) throw error;
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }
    const responseId = decodeURIComponent(href.split('/').at(-1)!);
    const tab = await (await opened).page();
    const shown = JSON.parse(String(await tab!.evaluate('document.body.innerText'))) as { id?: string; error?: unknown };
    expect(shown).toMatchObject({ id: responseId, object: 'response' });
    await tab!.close();
  });
});

describe('GET /v1/emulator/journal/events', () => {
  it('streams each new journal entry as an event, needs the key, and ends when the server closes', async () => {
    const running = await startServer({ config: { apiKey: API_KEY } });
    try {
      expect((await fetch(`${running.baseURL}/emulator/journal/events`)).status).toBe(401);
      const events = await fetch(`${running.baseURL}/emulator/journal/events`, { headers: { authorization: `Bearer ${API_KEY}` } });
      expect(events.status).toBe(200);
      expect(events.headers.get('content-type')).toContain('text/event-stream');
      const reader = events.body!.pipeThrough(new TextDecoderStream()).getReader();
      const created = await running.client.responses.create({ model: 'ptc-emulator', input: 'hello', store: false });
      let text = '';
      while (!text.includes('\n\nevent: journal.entry') || !text.endsWith('\n\n')) text += (await reader.read()).value ?? '';
      const data = text.split('\n').find((line) => line.startsWith('data: '))!;
      expect(JSON.parse(data.slice('data: '.length))).toMatchObject({ method: 'POST', path: '/v1/responses', response_id: created.id });
      await running.close();
      expect((await reader.read()).done).toBe(true);
    } finally {
      await running.close().catch(() => {});
    }
  });
});

describe('journal event streams open at once', () => {
  it(`are at most MAX_EVENT_STREAMS: one more is a 429 too_many_event_streams, and a closed one frees its place`, async () => {
    const running = await startServer({});
    const streams: AbortController[] = [];
    // Every response is kept: one garbage-collected would have its stream cancelled, and free its place.
    const responses: Response[] = [];
    const open = async (): Promise<Response> => {
      const controller = new AbortController();
      streams.push(controller);
      const response = await fetch(`${running.baseURL}/emulator/journal/events`, { signal: controller.signal });
      responses.push(response);
      return response;
    };
    try {
      for (let index = 0; index < MAX_EVENT_STREAMS; index++) expect((await open()).status).toBe(200);
      const refused = await open();
      expect(refused.status).toBe(429);
      expect(await refused.json()).toMatchObject({
        error: {
          code: 'too_many_event_streams',
          type: 'rate_limit_error',
          message: expect.stringContaining(`${MAX_EVENT_STREAMS} journal event streams are open`),
        },
      });
      // The API goes on serving, and a stream closed by its client gives its place back.
      expect((await running.client.responses.create({ model: 'ptc-emulator', input: 'hello', store: false })).status).toBe('completed');
      streams[0]!.abort();
      let again = await open();
      for (let tries = 0; again.status === 429 && tries < 200; tries++) {
        await new Promise((resolve) => setTimeout(resolve, 25));
        again = await open();
      }
      expect(again.status).toBe(200);
    } finally {
      for (const controller of streams) controller.abort();
      await running.close();
    }
  });
});

describe('a journal event stream whose client stops reading', () => {
  it('is ended by the server once its buffer passes the bound, while the server goes on serving', async () => {
    const running = await startServer({});
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(running.baseURL).port) });
    try {
      await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
      socket.write('GET /v1/emulator/journal/events HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n');
      // The client reads nothing while entries of 2 MB each (stored request bodies) are journaled:
      // far more than the bound and the kernel's socket buffers together.
      socket.pause();
      const big = 'x'.repeat(2 * 1024 * 1024);
      for (let index = 0; index < 8; index++) await running.client.responses.create({ model: 'ptc-emulator', input: `hello ${big}`, store: true });
      const ended = new Promise<number>((resolve) => {
        let received = 0;
        socket.on('data', (chunk: Buffer) => (received += chunk.length));
        socket.once('close', () => resolve(received));
      });
      socket.resume();
      // What reached the client is what was buffered before the cut, not all 16 MB.
      expect(await ended).toBeLessThan(8 * big.length);
      expect((await running.client.responses.create({ model: 'ptc-emulator', input: 'hello', store: false })).status).toBe('completed');
    } finally {
      socket.destroy();
      await running.close();
    }
  });
});

describe('the inspector setting', () => {
  it('PTC_INSPECTOR=off serves no page', async () => {
    const off = await startServer({ env: { PTC_INSPECTOR: 'off' } });
    try {
      expect((await fetch(`${off.baseURL.replace(/\/v1$/, '')}/inspector`)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
