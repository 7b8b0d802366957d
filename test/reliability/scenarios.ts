/**
 * The fault-injection matrix: every fault of the issue, for every stdio
 * protocol it applies to, with the outcome the contract promises. The
 * reliability suites run exactly this list and the report lists exactly this
 * list, so a scenario that fails (or never ran) still appears, as failing.
 */
import type { HostErrorCode } from '../../src/index.js';
import type { FaultProtocol } from '../support/faultPackages.js';

/** The faults the fixtures play (see fixtures/plugins/fault/shared/faults.mjs). */
export type FaultName =
  | 'crash-at-start'
  | 'crash-in-handshake'
  | 'crash-mid-call'
  | 'never-answer'
  | 'late-answer'
  | 'garbage-line'
  | 'half-line-eof'
  | 'oversize-line'
  | 'flood-stdout'
  | 'endless-line'
  | 'flood-stderr'
  | 'wrong-id'
  | 'result-and-error'
  | 'neither'
  | 'notifications'
  | 'stdout-log'
  | 'exit0-at-once'
  | 'ignore-eof'
  | 'ignore-sigterm'
  | 'grandchild'
  | 'exhaust-memory'
  | 'fork-swarm';

/**
 * What the next call to the faulty plugin must do:
 * - `ok`: it is answered (same process, or a fresh launch for the one-shot protocol);
 * - `fails-again`: it fails with the same code, and no quarantine is involved;
 * - `quarantined-then-ok`: it is refused with VARIANT_QUARANTINED; once the
 *   backoff passed, the plugin is respawned and answers;
 * - `quarantined-then-same`: refused likewise; after the backoff the respawn fails again with the same code.
 */
export type NextCall = 'ok' | 'fails-again' | 'quarantined-then-ok' | 'quarantined-then-same';

/** One scenario of the matrix. */
export interface Scenario {
  /** `<protocol>/<fault>`. */
  readonly id: string;
  readonly protocol: FaultProtocol;
  readonly fault: FaultName;
  /** Process faults are set by FAULT_MODE for the whole process; call faults by the `work` call's `fault` argument. */
  readonly scope: 'process' | 'call';
  /** The code of the faulty call, or `ok` when it must be answered. */
  readonly code: HostErrorCode | 'ok';
  readonly next: NextCall;
  /** The faulty call's timeout. */
  readonly timeoutMs: number;
  /** Why this is the contract's answer, for the report. */
  readonly why: string;
}

/** One fault's expectations per protocol; a protocol left out does not have that phase. */
interface FaultRow {
  readonly fault: FaultName;
  readonly scope: 'process' | 'call';
  readonly timeoutMs?: number;
  readonly expect: Partial<Record<FaultProtocol, { readonly code: HostErrorCode | 'ok'; readonly next: NextCall; readonly why: string }>>;
}

const CALL_TIMEOUT_MS = 2_000;
const FLOOD_TIMEOUT_MS = 60_000;

const crash = (why: string, next: NextCall = 'quarantined-then-ok') => ({ code: 'PLUGIN_CRASHED' as const, next, why });
const resourceLimit = (why: string) => ({ code: 'PLUGIN_RESOURCE_LIMIT' as const, next: 'quarantined-then-ok' as const, why });
const all = <T>(value: T): Record<FaultProtocol, T> => ({ 'mcp-plugin': value, 'ndjson-rpc': value, handshake: value });
// mcptest protocol v1 (seed 002, the host's default ndjsonCrash sticky): a crash is the answer to every later call; no respawn, no quarantine.
const stickyCrash = (why: string) => ({ code: 'PLUGIN_CRASHED' as const, next: 'fails-again' as const, why: `${why}; mcptest: every later call reports the crash (sticky, no quarantine)` });
// mcptest protocol v1 (the host's default ndjsonMalformed fail-call): a malformed answer fails its call and the child is left running.
const callOnly = (code: HostErrorCode, why: string) => ({ code, next: 'ok' as const, why: `${why}; mcptest: only that call fails, the child is left running` });

const ROWS: readonly FaultRow[] = [
  {
    fault: 'crash-at-start',
    scope: 'process',
    expect: { ...all(crash('exits before any protocol traffic; every respawn crashes the same way', 'quarantined-then-same')), 'ndjson-rpc': stickyCrash('exits before any protocol traffic') },
  },
  {
    fault: 'crash-in-handshake',
    scope: 'process',
    expect: {
      'mcp-plugin': crash('exits on initialize', 'quarantined-then-same'),
      handshake: crash('exits on the handshake request', 'quarantined-then-same'),
    },
  },
  { fault: 'crash-mid-call', scope: 'call', expect: { ...all(crash('exits while the call is pending; the next launch is healthy')), 'ndjson-rpc': stickyCrash('exits while the call is pending') } },
  {
    fault: 'never-answer',
    scope: 'call',
    expect: all({ code: 'PLUGIN_TIMEOUT', next: 'ok', why: 'a timeout is not a protocol break: no quarantine, the plugin stays usable' }),
  },
  {
    fault: 'late-answer',
    scope: 'call',
    expect: all({ code: 'PLUGIN_TIMEOUT', next: 'ok', why: 'the late answer is dropped, never delivered to another call' }),
  },
  {
    fault: 'garbage-line',
    scope: 'call',
    expect: {
      // Published MCP servers print banners and logs to stdout: under the host's default stdout policy (tolerate) such a line is plugin output.
      'mcp-plugin': { code: 'PLUGIN_TIMEOUT', next: 'ok', why: 'a line that is not JSON is plugin output (stdout: tolerate, the default): dropped, counted, emitted; the answer never comes' },
      'ndjson-rpc': callOnly('PLUGIN_INVALID_JSON', 'a line that is not JSON (mcptest InvalidJson, raw line attached)'),
      handshake: { code: 'PLUGIN_INVALID_JSON', next: 'quarantined-then-ok', why: 'a line that is not JSON breaks the protocol' },
    },
  },
  {
    fault: 'half-line-eof',
    scope: 'call',
    expect: { ...all(crash('stdout ends in the middle of the answer: the seed calls that a crash')), 'ndjson-rpc': stickyCrash('stdout ends in the middle of the answer') },
  },
  {
    fault: 'oversize-line',
    scope: 'call',
    expect: {
      'mcp-plugin': { code: 'PLUGIN_RESULT_TOO_LARGE', next: 'ok', why: 'the 2 MiB answer names its request: that call fails, its bytes are discarded, the plugin stays' },
      'ndjson-rpc': callOnly('PLUGIN_FRAME_TOO_LARGE', 'a 2 MiB line is reported as it crosses the 1 MiB frame cap; its bytes are discarded'),
      handshake: { code: 'PLUGIN_FRAME_TOO_LARGE', next: 'quarantined-then-ok', why: 'a 2 MiB line is reported as it crosses the 1 MiB frame cap; its bytes are discarded' },
    },
  },
  {
    fault: 'flood-stdout',
    scope: 'call',
    timeoutMs: FLOOD_TIMEOUT_MS,
    expect: {
      ...all({ code: 'PLUGIN_FRAME_TOO_LARGE' as const, next: 'quarantined-then-ok' as const, why: '1 GiB in one line is reported at the frame cap (MCP: at 16 times the cap, as output that may never end), never buffered' }),
      'ndjson-rpc': {
        code: 'PLUGIN_FRAME_TOO_LARGE',
        next: 'fails-again',
        why: '1 GiB in one line is reported at the frame cap, never buffered; mcptest leaves the child running, and its next answer lands inside the same flood, so that call fails the same way',
      },
    },
  },
  {
    // The long timeout makes the code the proof: detection by the call timeout would give PLUGIN_TIMEOUT.
    fault: 'endless-line',
    scope: 'call',
    timeoutMs: FLOOD_TIMEOUT_MS,
    expect: {
      ...all({ code: 'PLUGIN_FRAME_TOO_LARGE' as const, next: 'quarantined-then-ok' as const, why: 'a line with no newline is reported once it crosses the 1 MiB frame cap (MCP: 16 MiB), not left to the call timeout' }),
      'ndjson-rpc': {
        code: 'PLUGIN_FRAME_TOO_LARGE',
        next: 'fails-again',
        why: 'reported once it crosses the 1 MiB frame cap; mcptest leaves the child running, and each later answer lands inside the endless output, so each later call fails the same way (ndjsonMalformed stop-plugin ends it)',
      },
    },
  },
  {
    fault: 'flood-stderr',
    scope: 'call',
    timeoutMs: FLOOD_TIMEOUT_MS,
    expect: all({ code: 'ok', next: 'ok', why: 'stderr is kept in a bounded ring; the answer after the flood is delivered' }),
  },
  {
    fault: 'wrong-id',
    scope: 'call',
    expect: {
      'mcp-plugin': { code: 'PLUGIN_TIMEOUT', next: 'ok', why: 'JSON-RPC: a response to an unknown id is dropped, so the call times out' },
      'ndjson-rpc': callOnly('PLUGIN_MALFORMED_RESPONSE', 'mcptest InvalidResponse: the id matches no request'),
      handshake: { code: 'PLUGIN_MALFORMED_RESPONSE', next: 'quarantined-then-ok', why: 'malformed_response: request_id is not the one sent' },
    },
  },
  {
    fault: 'result-and-error',
    scope: 'call',
    expect: {
      ...all({ code: 'PLUGIN_MALFORMED_RESPONSE' as const, next: 'quarantined-then-ok' as const, why: 'exactly one of result and error is required' }),
      'ndjson-rpc': callOnly('PLUGIN_MALFORMED_RESPONSE', 'exactly one of result and error is required'),
    },
  },
  {
    fault: 'neither',
    scope: 'call',
    expect: {
      ...all({ code: 'PLUGIN_MALFORMED_RESPONSE' as const, next: 'quarantined-then-ok' as const, why: 'exactly one of result and error is required' }),
      'ndjson-rpc': callOnly('PLUGIN_MALFORMED_RESPONSE', 'exactly one of result and error is required'),
    },
  },
  {
    fault: 'notifications',
    scope: 'process',
    expect: {
      'mcp-plugin': { code: 'ok', next: 'ok', why: 'MCP allows notifications at any time; unknown ones are ignored' },
      'ndjson-rpc': { code: 'ok', next: 'ok', why: 'a line while no request is pending fails no call (logged)' },
      handshake: { code: 'PLUGIN_MALFORMED_RESPONSE', next: 'quarantined-then-same', why: 'one response line per launch: any extra line is malformed output' },
    },
  },
  {
    fault: 'stdout-log',
    scope: 'process',
    expect: {
      'mcp-plugin': { code: 'ok', next: 'ok', why: 'a log line on stdout is plugin output under the default stdout policy (tolerate): dropped, counted, emitted; the answer after it is delivered' },
      'ndjson-rpc': { code: 'PLUGIN_INVALID_JSON', next: 'fails-again', why: 'stdout carries protocol lines only; logs belong on stderr (mcptest: each call the log line precedes fails, the child is left running)' },
      handshake: { code: 'PLUGIN_INVALID_JSON', next: 'quarantined-then-same', why: 'stdout carries protocol lines only; logs belong on stderr' },
    },
  },
  {
    fault: 'exit0-at-once',
    scope: 'process',
    expect: { ...all(crash('status 0 before answering is still an exit before a response', 'quarantined-then-same')), 'ndjson-rpc': stickyCrash('status 0 before answering is still an exit before a response') },
  },
  {
    fault: 'ignore-eof',
    scope: 'process',
    expect: {
      'mcp-plugin': { code: 'ok', next: 'ok', why: 'answers normally; close escalates from EOF to SIGTERM' },
      'ndjson-rpc': { code: 'ok', next: 'ok', why: 'answers normally; close escalates from EOF to SIGTERM' },
      handshake: { code: 'PLUGIN_TIMEOUT', next: 'fails-again', why: 'the one-shot protocol requires an exit after the response (teardown timeout)' },
    },
  },
  {
    fault: 'ignore-sigterm',
    scope: 'process',
    expect: {
      'mcp-plugin': { code: 'ok', next: 'ok', why: 'answers normally; close escalates to SIGKILL' },
      'ndjson-rpc': { code: 'ok', next: 'ok', why: 'answers normally; close escalates to SIGKILL' },
      handshake: { code: 'PLUGIN_TIMEOUT', next: 'fails-again', why: 'teardown timeout; the stop escalates to SIGKILL' },
    },
  },
  {
    fault: 'grandchild',
    scope: 'call',
    expect: { ...all(crash('the exit is detected although a grandchild holds stdout open; the whole tree is killed')), 'ndjson-rpc': stickyCrash('the exit is detected although a grandchild holds stdout open; the whole tree is killed') },
  },
  {
    fault: 'exhaust-memory',
    scope: 'call',
    expect: { ...all(crash('the V8 heap cap (64 MiB) kills it; the host reports the exit and lives on')), 'ndjson-rpc': stickyCrash('the V8 heap cap (64 MiB) kills it; the host reports the exit and lives on') },
  },
  {
    fault: 'fork-swarm',
    scope: 'call',
    // Starting ~500 processes one after another takes a few seconds on a loaded 2-core machine.
    timeoutMs: 30_000,
    expect: {
      ...all(resourceLimit("the plugin's task cap (512, one control group per plugin) refuses a fork; the host stops its whole tree, the healthy plugin keeps answering")),
      'ndjson-rpc': {
        code: 'PLUGIN_RESOURCE_LIMIT',
        next: 'fails-again',
        why: "the plugin's task cap (512) refuses a fork; the host stops its whole tree; mcptest: every later call reports it (sticky, no quarantine)",
      },
    },
  },
];

/** Every scenario, protocol by protocol in matrix order. */
export const SCENARIOS: readonly Scenario[] = ROWS.flatMap((row) =>
  (['mcp-plugin', 'ndjson-rpc', 'handshake'] as const).flatMap((protocol) => {
    const expected = row.expect[protocol];
    if (expected === undefined) return [];
    return [
      {
        id: `${protocol}/${row.fault}`,
        protocol,
        fault: row.fault,
        scope: row.scope,
        code: expected.code,
        next: expected.next,
        timeoutMs: row.timeoutMs ?? CALL_TIMEOUT_MS,
        why: expected.why,
      },
    ];
  }),
);

/** The scenarios of one protocol. */
export const scenariosOf = (protocol: FaultProtocol): readonly Scenario[] => SCENARIOS.filter((s) => s.protocol === protocol);
