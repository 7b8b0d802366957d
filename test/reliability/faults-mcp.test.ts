// Every fault of the matrix against a mcp-plugin plugin, through PluginHost and the real sandbox.
import { faultSuite } from './suite.js';

faultSuite('mcp-plugin');
