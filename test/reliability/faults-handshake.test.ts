// Every fault of the matrix against a handshake plugin, through PluginHost and the real sandbox.
import { faultSuite } from './suite.js';

faultSuite('handshake');
