// Interop driver: one official TypeScript MCP client against one of our stdio servers.
//
//   node driver.mjs CLIENT MODE SCENARIO ANSWER -- COMMAND [ARG...]
//
//   CLIENT    v1 (@modelcontextprotocol/sdk) or v2 (@modelcontextprotocol/client)
//   MODE      legacy (initialize handshake), modern (v2 only: pinned 2026-07-28) or auto (v2 only)
//   SCENARIO  everything (the interactive tools of mcp-ref-everything, plus a few plain ones),
//             tasks (v2 modern: declares the io.modelcontextprotocol/tasks extension and calls a
//             task-capable tool, to record what the client makes of a task handle), or
//             fs:FILE (mcp-ref-fs: list tools, read and grep FILE, then delete_file FILE)
//   ANSWER    accept or decline: what the elicitation handler answers
//
// The client spawns COMMAND itself (with MCP_TS_INTEROP_CWD as its working directory when set).
// Prints exactly one JSON line on stdout with everything observed, and exits 0 when the session
// ran to the end (individual tool errors are data, recorded in the line), non-zero otherwise.
// Server stderr is captured and its tail included in the line.

import { readFileSync } from 'node:fs';
import { dirname } from 'node:path';

const PROTOCOL_TIMEOUT_MS = 15000;
const OVERALL_TIMEOUT_MS = Number(process.env.MCP_TS_INTEROP_TIMEOUT_MS || 45000);

const separator = process.argv.indexOf('--');
if (separator < 0 || process.argv.length < separator + 2) {
    console.error('usage: node driver.mjs CLIENT MODE SCENARIO ANSWER -- COMMAND [ARG...]');
    process.exit(64);
}
const [clientKind, mode, scenario, answer] = process.argv.slice(2, separator);
const [command, ...args] = process.argv.slice(separator + 1);

const report = { client: clientKind, mode, scenario, answer, ok: false, asked: [], calls: {} };
let stderrText = '';

function finish(code) {
    report.serverStderrTail = stderrText.slice(-2000);
    process.stdout.write(JSON.stringify(report) + '\n', () => process.exit(code));
}

const watchdog = setTimeout(() => {
    report.fatal = `driver timed out after ${OVERALL_TIMEOUT_MS} ms`;
    finish(3);
}, OVERALL_TIMEOUT_MS);

// --- canned answers: what a host's UI and LLM would give ------------------------------------------

const FORM_ANSWERS = { name: 'Ada', color: 'teal', text: 'more', value: 'v', ok: true, confirm: true, context: 'interop' };
const ROOTS = [{ uri: 'file:///tmp/interop', name: 'interop' }];

function onElicit(params) {
    const properties = Object.keys(params?.requestedSchema?.properties ?? {});
    report.asked.push({ method: 'elicitation/create', mode: params?.mode ?? null, message: params?.message, fields: properties, url: params?.url ?? null });
    if (answer === 'decline') return { action: 'decline' };
    if (params?.mode === 'url') return { action: 'accept' };
    const content = {};
    for (const key of properties) content[key] = key in FORM_ANSWERS ? FORM_ANSWERS[key] : true;
    return { action: 'accept', content };
}

function onSample(params) {
    report.asked.push({ method: 'sampling/createMessage', maxTokens: params?.maxTokens, messages: params?.messages?.length ?? 0 });
    return { role: 'assistant', content: { type: 'text', text: 'short' }, model: 'interop-model' };
}

function onRoots() {
    report.asked.push({ method: 'roots/list' });
    return { roots: ROOTS };
}

function installedVersion(name) {
    // The package.json node resolves imports to: node_modules here or in a parent directory
    // (read directly, since the packages' export maps hide package.json).
    for (let directory = new URL('./', import.meta.url); ; directory = new URL('../', directory)) {
        try {
            return JSON.parse(readFileSync(new URL(`node_modules/${name}/package.json`, directory), 'utf8')).version;
        } catch {
            if (directory.pathname === '/') return null;
        }
    }
}

function describeError(error) {
    const described = { name: error?.constructor?.name ?? typeof error, message: String(error?.message ?? error) };
    if (error && error.code !== undefined) described.code = error.code;
    if (error && error.data !== undefined) described.data = error.data;
    return described;
}

// What crossed the pipe after the handshake, by kind: proves which era's input mechanism was used.
const wire = { clientRequests: {}, serverRequests: {}, inputRequiredResults: 0, taskResults: 0 };
report.wire = wire;

function count(table, key) {
    table[key] = (table[key] ?? 0) + 1;
}

function tapTransport(transport) {
    const deliver = transport.onmessage;
    transport.onmessage = (message, ...rest) => {
        if (message && typeof message.method === 'string' && message.id !== undefined) count(wire.serverRequests, message.method);
        if (message?.result?.resultType === 'input_required') wire.inputRequiredResults += 1;
        if (message?.result?.resultType === 'task') wire.taskResults += 1;
        return deliver?.call(transport, message, ...rest);
    };
    const send = transport.send.bind(transport);
    transport.send = (message, ...rest) => {
        if (message && typeof message.method === 'string' && message.id !== undefined) count(wire.clientRequests, message.method);
        return send(message, ...rest);
    };
}

function summarize(result) {
    const blocks = Array.isArray(result?.content) ? result.content : [];
    return {
        text: blocks.filter(block => block.type === 'text').map(block => block.text).join(' '),
        isError: result?.isError === true,
        structured: result?.structuredContent ?? null
    };
}

// --- the two client generations --------------------------------------------------------------------

const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CAPABILITIES = { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} };

function serverEnvironment(defaults) {
    // The SDKs pass only a small default environment to the server; keep that, plus coverage's variables.
    const env = { ...defaults };
    for (const [name, value] of Object.entries(process.env)) if (name.startsWith('COVERAGE')) env[name] = value;
    return env;
}

async function connectV1() {
    const { Client } = await import('@modelcontextprotocol/sdk/client/index.js');
    const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/sdk/client/stdio.js');
    const types = await import('@modelcontextprotocol/sdk/types.js');
    report.sdkVersion = installedVersion('@modelcontextprotocol/sdk');
    if (mode !== 'legacy') throw new Error(`the v1 client has only the legacy (initialize) mode, not ${mode}`);
    const client = new Client({ name: 'mcp-ref-ts-interop-v1', version: '1.0.0' }, { capabilities: CAPABILITIES });
    client.setRequestHandler(types.ElicitRequestSchema, async request => onElicit(request.params));
    client.setRequestHandler(types.CreateMessageRequestSchema, async request => onSample(request.params));
    client.setRequestHandler(types.ListRootsRequestSchema, async () => onRoots());
    const transport = new StdioClientTransport({
        command, args, stderr: 'pipe', cwd: process.env.MCP_TS_INTEROP_CWD || undefined, env: serverEnvironment(getDefaultEnvironment())
    });
    transport.stderr?.on('data', chunk => (stderrText += chunk.toString()));
    // v1 has no accessor for the negotiated version; it hands it to transports that take one.
    transport.setProtocolVersion = version => (report.protocolVersion = version);
    report.protocolVersion = null;
    await client.connect(transport, { timeout: PROTOCOL_TIMEOUT_MS });
    tapTransport(transport);
    return {
        client,
        era: 'legacy',
        callTool: (name, toolArgs) => client.callTool({ name, arguments: toolArgs }, undefined, { timeout: PROTOCOL_TIMEOUT_MS }),
        getPrompt: (name, promptArgs) => client.getPrompt({ name, arguments: promptArgs }, { timeout: PROTOCOL_TIMEOUT_MS })
    };
}

async function connectV2() {
    const { Client } = await import('@modelcontextprotocol/client');
    const { StdioClientTransport, getDefaultEnvironment } = await import('@modelcontextprotocol/client/stdio');
    report.sdkVersion = installedVersion('@modelcontextprotocol/client');
    const versionNegotiation = { legacy: undefined, modern: { mode: { pin: '2026-07-28' } }, auto: { mode: 'auto' } }[mode];
    if (!(mode in { legacy: 1, modern: 1, auto: 1 })) throw new Error(`unknown mode ${mode}`);
    // The tasks scenario declares the io.modelcontextprotocol/tasks extension, to see what the client makes of a task handle.
    const capabilities = scenario === 'tasks' ? { ...CAPABILITIES, extensions: { [TASKS_EXTENSION]: {} } } : CAPABILITIES;
    const client = new Client(
        { name: 'mcp-ref-ts-interop-v2', version: '2.0.0' },
        { capabilities, ...(versionNegotiation && { versionNegotiation }) }
    );
    client.setRequestHandler('elicitation/create', async request => onElicit(request.params));
    client.setRequestHandler('sampling/createMessage', async request => onSample(request.params));
    client.setRequestHandler('roots/list', async () => onRoots());
    client.onerror = error => (report.clientErrors ??= []).push(describeError(error));
    const transport = new StdioClientTransport({
        command, args, stderr: 'pipe', cwd: process.env.MCP_TS_INTEROP_CWD || undefined, env: serverEnvironment(getDefaultEnvironment())
    });
    transport.stderr?.on('data', chunk => (stderrText += chunk.toString()));
    await client.connect(transport, { timeout: PROTOCOL_TIMEOUT_MS });
    tapTransport(transport);
    report.protocolVersion = client.getNegotiatedProtocolVersion() ?? null;
    return {
        client,
        era: client.getProtocolEra() ?? null,
        callTool: (name, toolArgs) => client.callTool({ name, arguments: toolArgs }, { timeout: PROTOCOL_TIMEOUT_MS }),
        getPrompt: (name, promptArgs) => client.getPrompt({ name, arguments: promptArgs }, { timeout: PROTOCOL_TIMEOUT_MS })
    };
}

// --- scenarios --------------------------------------------------------------------------------------

// Every interactive tool of mcp-ref-everything, with its arguments.
const EVERYTHING_CALLS = [
    ['test_streaming_elicitation', {}],
    ['test_input_required_result_elicitation', {}],
    ['test_input_required_result_sampling', {}],
    ['test_input_required_result_list_roots', {}],
    ['test_input_required_result_request_state', {}],
    ['test_input_required_result_multiple_inputs', {}],
    ['test_input_required_result_multi_round', {}],
    ['test_input_required_result_tampered_state', {}],
    ['test_input_required_result_capabilities', {}],
    ['test_url_elicitation', {}],
    ['confirm_delete', { filename: 'notes.txt' }],
    ['multi_input', {}],
    ['test_tool_with_task', {}],
    // Task-capable but not interactive: without the tasks extension it must answer inline.
    ['slow_compute', { seconds: 1, label: 'interop' }],
    // A plain call, to prove the basics next to the interactive ones.
    ['greet', { name: 'TypeScript' }]
];

async function record(key, action) {
    const askedBefore = report.asked.length;
    const started = Date.now();
    try {
        report.calls[key] = summarize(await action());
    } catch (error) {
        report.calls[key] = { error: describeError(error) };
    }
    report.calls[key].ms = Date.now() - started;
    report.calls[key].asked = report.asked.slice(askedBefore).map(question => question.method);
}

async function runEverything(session) {
    const { tools } = await session.client.listTools();
    report.tools = tools.map(tool => tool.name);
    for (const [name, toolArgs] of EVERYTHING_CALLS) await record(name, () => session.callTool(name, toolArgs));
    // prompts/get may ask for input exactly like a tool.
    await record('prompt:test_input_required_result_prompt', async () => {
        const result = await session.getPrompt('test_input_required_result_prompt', {});
        const content = result.messages?.[0]?.content;
        return { content: content?.type === 'text' ? [content] : [] };
    });
}

async function runFilesystem(session, file) {
    const { tools } = await session.client.listTools();
    report.tools = tools.map(tool => tool.name);
    await record('list_allowed_directories', () => session.callTool('list_allowed_directories', {}));
    await record('read_text_file', () => session.callTool('read_text_file', { path: file }));
    // Task-capable (long running) but, without the tasks extension declared, answered inline.
    await record('grep_files', () => session.callTool('grep_files', { path: dirname(file), pattern: 'interop' }));
    await record('delete_file', () => session.callTool('delete_file', { path: file }));
}

async function runTasks(session) {
    const discovered = session.client.getDiscoverResult?.();
    report.serverExtensions = Object.keys(discovered?.capabilities?.extensions ?? session.client.getServerCapabilities()?.extensions ?? {});
    await record('slow_compute', () => session.callTool('slow_compute', { seconds: 1, label: 'task' }));
    await record('greet', () => session.callTool('greet', { name: 'after tasks' }));
}

// --- main -------------------------------------------------------------------------------------------

let session;
try {
    if (!['accept', 'decline'].includes(answer)) throw new Error(`ANSWER must be accept or decline, not ${answer}`);
    session = clientKind === 'v1' ? await connectV1() : clientKind === 'v2' ? await connectV2() : null;
    if (!session) throw new Error(`unknown client ${clientKind}`);
    report.era = session.era;
    report.serverInfo = session.client.getServerVersion() ?? null;
    if (scenario === 'everything') await runEverything(session);
    else if (scenario === 'tasks') await runTasks(session);
    else if (scenario.startsWith('fs:')) await runFilesystem(session, scenario.slice(3));
    else throw new Error(`unknown scenario ${scenario}`);
    report.ok = true;
} catch (error) {
    report.fatal = describeError(error);
    if (error?.stack) report.fatal.stack = String(error.stack).split('\n').slice(0, 6).join('\n');
} finally {
    try {
        await session?.client.close();
    } catch (error) {
        report.closeError = describeError(error);
    }
    clearTimeout(watchdog);
    finish(report.ok ? 0 : 1);
}
