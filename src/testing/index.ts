/**
 * `mcp-plugin-host/testing`: what a plugin author imports in their own test
 * suite to check a plugin the way the host will treat it. Validate a plugin
 * directory with the host's exact codes, start the plugin under a throwaway
 * profile inside the real sandbox, compare the tools it lists with its
 * manifest, run its canary and call its tools. Built only on the public API.
 *
 * @packageDocumentation
 */

export { expectHostError, expectOk } from './assertions.js';
export { startPlugin, type PluginUnderTest, type StartPluginOptions } from './startPlugin.js';
export { validatePluginDir, type PluginDirReport, type PluginDirSkippedCheck, type PluginDirViolation, type ValidatePluginDirOptions } from './validatePluginDir.js';
