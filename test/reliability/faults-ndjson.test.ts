// Every fault of the matrix against a ndjson-rpc plugin, through PluginHost and the real sandbox.
import { faultSuite } from './suite.js';

faultSuite('ndjson-rpc');
