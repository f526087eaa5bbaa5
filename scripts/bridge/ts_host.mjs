#!/usr/bin/env node
// A host on the TypeScript SDK client, v1 (`@modelcontextprotocol/sdk` 1.x) or v2
// (`@modelcontextprotocol/client` 2.x), that starts an MCP server over stdio (meant for
// `mcpc bridge ...`) and checks what a host needs of it, one line per check: `ok NAME`,
// `FAIL NAME: why`, `XFAIL NAME: why` (a known failure, given with --xfail), `skip NAME: why`
// (the server offers no tool for it). Exits 1 on any FAIL, 2 on the overall timeout.
//
//   ts_host.mjs [--sdk v1|v2] [--era legacy|auto] [--timeout SECONDS] [--xfail NAME=REASON]...
//               [--call '{"check": NAME, "tool": T, "arguments": {...}, "expect": [TEXT...]}']...
//               -- COMMAND [ARGS...]
//
// --sdk defaults to $MCP_TS_SDK, else v1; --era (v2 only: its versionNegotiation mode) defaults
// to legacy. HOST_TRACE=1 prints every message (and the transport's errors) on stderr. The SDK
// packages are loaded from $PEERS_NODE_MODULES, else $PEERS/node/node_modules.
// Checks: connect (initialize, or server/discover for v2 in auto mode), tools/list, a call with progress (`trigger-long-running-operation`: all
// progress on the wire, in order, before the result; at least one to the SDK's callback),
// sampling (`trigger-sampling-request`), elicitation (`trigger-elicitation-request`), roots
// (`get-roots-list`), and a call cancelled through its AbortSignal: the SDK sends
// `notifications/cancelled`, no answer to that id ever arrives (seen on the wire, under the
// SDK), and a following call still works. Each --call adds a check: the tool's result (not an
// error) contains every expected text.

import { createRequire } from 'node:module';
import path from 'node:path';

const SAMPLED = 'bridge-sampled-7f3a';
const NAME = 'Ada Lovelace';
const ROOT = 'file:///tmp/bridge-interop-root';
const STEP = 20_000; // ms: the bound of one check's wait

function parseArgs(argv) {
  const opts = { sdk: process.env.MCP_TS_SDK || 'v1', era: 'legacy', timeout: 120, xfail: new Map(), calls: [], command: [] };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--') {
      opts.command = argv.slice(i + 1);
      break;
    } else if (a === '--sdk') opts.sdk = argv[++i];
    else if (a === '--era') opts.era = argv[++i];
    else if (a === '--timeout') opts.timeout = Number(argv[++i]);
    else if (a === '--call') opts.calls.push(JSON.parse(argv[++i]));
    else if (a === '--xfail') {
      const x = argv[++i];
      const eq = x.indexOf('=');
      opts.xfail.set(eq < 0 ? x : x.slice(0, eq), eq < 0 ? 'known failure' : x.slice(eq + 1));
    } else {
      opts.command = argv.slice(i);
      break;
    }
  }
  if (!['v1', 'v2'].includes(opts.sdk) || opts.command.length === 0) {
    console.error('usage: ts_host.mjs [--sdk v1|v2] [--era legacy|auto] [--timeout S] [--xfail NAME=REASON]... [--call JSON]... -- COMMAND [ARGS...]');
    process.exit(64);
  }
  return opts;
}

const opts = parseArgs(process.argv.slice(2));
const overall = setTimeout(() => {
  console.log(`FAIL overall: no end within ${opts.timeout} s`);
  process.exit(2);
}, opts.timeout * 1000);
overall.unref();

let failed = 0;
const oneLine = (why) => String(why).split(/\s+/).join(' ').slice(0, 500);
const report = {
  ok(name) {
    if (opts.xfail.has(name)) console.log(`ok ${name} (XPASS: marked as a known failure: ${opts.xfail.get(name)})`);
    else console.log(`ok ${name}`);
  },
  fail(name, why) {
    if (opts.xfail.has(name)) console.log(`XFAIL ${name}: ${opts.xfail.get(name)} (now: ${oneLine(why)})`);
    else {
      console.log(`FAIL ${name}: ${oneLine(why)}`);
      failed++;
    }
  },
  check(name, cond, why) {
    if (cond) this.ok(name);
    else this.fail(name, typeof why === 'function' ? why() : why);
  },
  skip(name, why) {
    console.log(`skip ${name}: ${why}`);
  },
};

/** Rejects after ms (the bound of one wait). */
function within(ms, promise, what) {
  let timer;
  const limit = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, limit]).finally(() => clearTimeout(timer));
}

const modules = process.env.PEERS_NODE_MODULES || path.join(process.env.PEERS || 'target/peers', 'node', 'node_modules');
const require = createRequire(path.join(path.resolve(modules), 'noop.js'));

/** The SDK's pieces, v1 or v2, behind one shape. */
function loadSdk(sdk) {
  if (sdk === 'v1') {
    const { Client } = require('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport } = require('@modelcontextprotocol/sdk/client/stdio.js');
    const t = require('@modelcontextprotocol/sdk/types.js');
    return {
      Client,
      StdioClientTransport,
      clientOptions: {},
      onRequest: (client, method, handler) => {
        const schema = {
          'sampling/createMessage': t.CreateMessageRequestSchema,
          'elicitation/create': t.ElicitRequestSchema,
          'roots/list': t.ListRootsRequestSchema,
        }[method];
        client.setRequestHandler(schema, handler);
      },
      callTool: (client, params, options) => client.callTool(params, t.CallToolResultSchema, options),
    };
  }
  const { Client } = require('@modelcontextprotocol/client');
  const { StdioClientTransport } = require('@modelcontextprotocol/client/stdio');
  return {
    Client,
    StdioClientTransport,
    clientOptions: { versionNegotiation: { mode: opts.era } },
    onRequest: (client, method, handler) => client.setRequestHandler(method, handler),
    callTool: (client, params, options) => client.callTool(params, options),
  };
}

/** Copies every JSON-RPC message between the SDK and the server (the transport kept as it is). */
function tap(transport) {
  const wire = { sent: [], received: [] };
  const trace = process.env.HOST_TRACE ? (dir, m) => console.error(`${dir} ${JSON.stringify(m)}`) : () => {};
  const send = transport.send.bind(transport);
  transport.send = (message, options) => {
    trace('host>', message);
    wire.sent.push(message);
    return send(message, options);
  };
  let handler;
  Object.defineProperty(transport, 'onmessage', {
    configurable: true,
    get: () => handler && ((message, extra) => handler(message, extra)),
    set: (h) => {
      handler = h
        ? (message, extra) => {
            trace('host<', message);
            wire.received.push(message);
            return h(message, extra);
          }
        : undefined;
    },
  });
  let onerror;
  Object.defineProperty(transport, 'onerror', {
    configurable: true,
    get: () => onerror,
    set: (h) => {
      onerror = h
        ? (error) => {
            trace('host! transport error:', String(error?.message ?? error));
            return h(error);
          }
        : undefined;
    },
  });
  return wire;
}

/** Content valid for a form elicitation's requested schema: defaults, else a value of the type. */
function fill(schema) {
  const out = {};
  for (const [key, prop] of Object.entries(schema?.properties ?? {})) {
    if ('default' in prop) out[key] = prop.default;
    else if (prop.type === 'string') {
      if (prop.enum?.length) out[key] = prop.enum[0];
      else if (prop.oneOf?.length) out[key] = prop.oneOf[0].const;
      else
        out[key] =
          { email: 'ada@example.com', uri: 'https://example.com/ada', date: '1815-12-10', 'date-time': '1815-12-10T00:00:00Z' }[
            prop.format
          ] ?? NAME;
    } else if (prop.type === 'boolean') out[key] = true;
    else if (prop.type === 'integer' || prop.type === 'number') out[key] = prop.minimum ?? 1;
    else if (prop.type === 'array') {
      const choices = prop.items?.enum ?? (prop.items?.anyOf ?? []).map((c) => c.const);
      out[key] = choices.slice(0, 1);
    }
  }
  return out;
}

/** The progress values received for the first tools/call sent after `sentBefore`, before its answer. */
// The progress values received for the first tools/call sent after `sentBefore`, before its
// final answer. A 2026-07-28 session may answer it `input_required` and the SDK sends it again
// (a new id, maybe a new token): every send of the same tool counts as that call.
function progressOnWire(wire, sentBefore) {
  const first = wire.sent.slice(sentBefore).find((m) => m.method === 'tools/call');
  if (!first) return [];
  const calls = wire.sent.slice(sentBefore).filter((m) => m.method === 'tools/call' && m.params?.name === first.params?.name);
  const tokens = new Set(calls.map((c) => JSON.stringify(c.params?._meta?.progressToken)).filter((t) => t !== undefined));
  const ids = new Set(calls.map((c) => JSON.stringify(c.id)));
  const values = [];
  for (const m of wire.received) {
    const final = m.result?.resultType !== 'input_required';
    if (!('method' in m) && ids.has(JSON.stringify(m.id)) && final) return values;
    if (m.method === 'notifications/progress' && tokens.has(JSON.stringify(m.params?.progressToken))) values.push(m.params.progress);
  }
  return [];
}

const textOf = (result) => (result?.content ?? []).map((c) => c.text ?? '').join('\n');
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function main() {
  const sdk = loadSdk(opts.sdk);
  const asked = { sampling: 0, elicitation: 0, roots: 0 };
  const client = new sdk.Client(
    { name: `ts-host-${opts.sdk}`, version: '1' },
    { capabilities: { sampling: {}, elicitation: { form: {} }, roots: { listChanged: true } }, ...sdk.clientOptions },
  );
  sdk.onRequest(client, 'sampling/createMessage', async () => {
    asked.sampling++;
    return { role: 'assistant', content: { type: 'text', text: SAMPLED }, model: 'bridge-interop-model', stopReason: 'endTurn' };
  });
  sdk.onRequest(client, 'elicitation/create', async (request) => {
    asked.elicitation++;
    return { action: 'accept', content: fill(request.params.requestedSchema) };
  });
  sdk.onRequest(client, 'roots/list', async () => {
    asked.roots++;
    return { roots: [{ uri: ROOT, name: 'bridge-root' }] };
  });
  const [command, ...args] = opts.command;
  const transport = new sdk.StdioClientTransport({ command, args, stderr: 'inherit' });
  const wire = tap(transport);
  try {
    await within(STEP, client.connect(transport), 'connect');
    const methods = wire.sent.map((m) => m.method).filter(Boolean);
    const version = client.getServerVersion?.();
    // v1 (and v2 in legacy mode) initializes; v2 in auto mode asks server/discover (in a probe
    // process of its own, not on this tap) and the bridge answers as a 2026-07-28 server.
    report.check('connect', Boolean(version), `sent ${methods}, server ${JSON.stringify(version)}`);
    console.log(`# server ${JSON.stringify(version)}, sent ${JSON.stringify(methods.slice(0, 3))}`);
    const listed = await within(STEP, client.listTools(), 'tools/list');
    const tools = new Set(listed.tools.map((t) => t.name));
    report.check('tools/list', tools.size > 0, 'no tools');

    // A call with progress.
    if (tools.has('trigger-long-running-operation')) {
      const seen = [];
      const sentBefore = wire.sent.length;
      try {
        const r = await within(
          STEP,
          sdk.callTool(client, { name: 'trigger-long-running-operation', arguments: { duration: 1, steps: 3 } }, {
            onprogress: (p) => seen.push(p.progress),
          }),
          'call with progress',
        );
        const onWire = progressOnWire(wire, sentBefore);
        const increasing = (xs) => xs.every((v, i) => i === 0 || v > xs[i - 1]);
        // v2 in a 2026-07-28 session may report a value again after an input round (its retry).
        const nondecreasing = (xs) => xs.every((v, i) => i === 0 || v >= xs[i - 1]);
        // On the wire: all three, in order, before the result. The SDK's callback: at least one
        // (v2 runs notification handlers in a later microtask than the response's, so a last
        // progress read in the same chunk as the result is dropped: the SDK's doing).
        report.check(
          'call with progress',
          onWire.length === 3 && increasing(onWire) && seen.length > 0 && nondecreasing(seen) && textOf(r).includes('completed'),
          () => `progress on the wire before the result ${JSON.stringify(onWire)}, to the callback ${JSON.stringify(seen)}, result ${JSON.stringify(textOf(r))}`,
        );
        if (seen.length !== onWire.length) console.log(`# the SDK's callback saw ${seen.length} of the ${onWire.length} progress notifications`);
      } catch (e) {
        report.fail('call with progress', e);
      }
    } else report.skip('call with progress', 'no trigger-long-running-operation tool');

    // Sampling, elicitation and roots: each a tool that asks the client.
    const asks = [
      ['sampling', 'trigger-sampling-request', { prompt: 'say something' }, [SAMPLED]],
      ['elicitation', 'trigger-elicitation-request', {}, [NAME, 'accept']],
      ['roots', 'get-roots-list', {}, [ROOT]],
    ];
    for (const [check, tool, toolArgs, wanted] of asks) {
      if (!tools.has(tool)) {
        report.skip(check, `no ${tool} tool`);
        continue;
      }
      // server-everything asks for the roots once per session (at its start), and keeps them.
      const before = check === 'roots' ? 0 : asked[check];
      try {
        const r = await within(STEP, sdk.callTool(client, { name: tool, arguments: toolArgs }), check);
        const text = textOf(r);
        report.check(
          check,
          !r.isError && asked[check] > before && wanted.every((w) => text.includes(w)),
          () => `handler asked ${asked[check] - before} times, result ${JSON.stringify(text)}`,
        );
      } catch (e) {
        report.fail(check, e);
      }
    }

    // The extra calls of --call.
    for (const { check, tool, arguments: toolArgs = {}, expect = [] } of opts.calls) {
      if (!tools.has(tool)) {
        report.skip(check, `no ${tool} tool`);
        continue;
      }
      try {
        const r = await within(STEP, sdk.callTool(client, { name: tool, arguments: toolArgs }), check);
        const text = textOf(r);
        report.check(check, !r.isError && expect.every((w) => text.includes(w)), () => `result ${JSON.stringify(text)}`);
      } catch (e) {
        report.fail(check, e);
      }
    }

    // Cancel a call: after its first progress (so it reached the server), through its AbortSignal.
    if (tools.has('trigger-long-running-operation')) await cancel(sdk, client, wire);
    else report.skip('cancel', 'no trigger-long-running-operation tool');
  } finally {
    await within(STEP, client.close(), 'close').catch((e) => report.fail('close', e));
  }
}

async function cancel(sdk, client, wire) {
  const duration = 3;
  const started = Date.now();
  const sentBefore = wire.sent.length;
  const abort = new AbortController();
  let progressed;
  const firstProgress = new Promise((resolve) => (progressed = resolve));
  let outcome = 'pending';
  const call = sdk
    .callTool(client, { name: 'trigger-long-running-operation', arguments: { duration, steps: 6 } }, {
      onprogress: () => progressed(),
      signal: abort.signal,
    })
    .then(
      (r) => (outcome = `result ${JSON.stringify(textOf(r))}`),
      (e) => (outcome = `rejected: ${e?.name ?? ''} ${e?.message ?? e}`),
    );
  try {
    await within(STEP, Promise.race([firstProgress, call]), 'first progress');
  } catch (e) {
    report.fail('cancel', `no progress before cancelling: ${e}`);
    return;
  }
  abort.abort('the host gave up');
  await within(STEP, call, 'the cancelled call').catch(() => {});
  const calls = wire.sent.slice(sentBefore).filter((m) => m.method === 'tools/call' && m.params?.arguments?.steps === 6);
  const id = calls[0]?.id;
  const cancels = wire.sent.slice(sentBefore).filter((m) => m.method === 'notifications/cancelled' && m.params?.requestId === id);
  // A following call still works.
  try {
    const r = await within(
      STEP,
      sdk.callTool(client, { name: 'trigger-long-running-operation', arguments: { duration: 0.2, steps: 1 } }),
      'call after cancel',
    );
    report.check('call after cancel', textOf(r).includes('completed'), () => `result ${JSON.stringify(textOf(r))}`);
  } catch (e) {
    report.fail('call after cancel', e);
  }
  // No answer to the cancelled call, even once the server would have finished it.
  await sleep(Math.max(0, started + (duration + 1) * 1000 - Date.now()));
  const answers = wire.received.filter((m) => !('method' in m) && m.id === id);
  report.check(
    'cancel',
    id !== undefined && cancels.length > 0 && outcome.startsWith('rejected') && answers.length === 0,
    () => `call id ${id}, cancels sent ${JSON.stringify(cancels)}, outcome ${outcome}, answers on the wire ${JSON.stringify(answers)}`,
  );
}

try {
  await main();
} catch (e) {
  console.log(`FAIL host: ${oneLine(e?.stack ?? e)}`);
  failed++;
}
process.exit(failed ? 1 : 0);
