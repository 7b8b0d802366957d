/** A Python interpreter pin's search path: relative directories of the install root, and nothing else. */
import { describe, expect, it } from 'vitest';
import { checkRecordShape, type ExecutableBindingRecord } from '../../src/binding/ExecutableBinding.js';
import type { InterpreterPin } from '../../src/binding/interpreter.js';
import { withPythonPath } from '../../src/binding/pythonPath.js';
import { pythonVerifiedMainProgram } from '../../src/binding/pythonLoader.js';

const SHA = 'a'.repeat(64);
const python: InterpreterPin = {
  path: '/usr/bin/python3.11',
  sha256: SHA,
  args: [],
  kind: 'python',
  identity: { dev: '1', ino: '2', size: '3', mtime_ns: '4', ctime_ns: '5' },
};

function record(pin: InterpreterPin): ExecutableBindingRecord {
  return {
    executable_path: 'server/main.py',
    executable_sha256: SHA,
    argv_normalized: [pin.path, '/root/install/server/main.py'],
    install_root: '/root/install',
    interpreter: pin,
  };
}

describe('withPythonPath', () => {
  it('records directories of the install root, normalized', () => {
    expect(withPythonPath(python, ['server/lib/', './vendor'], 'main.py')._unsafeUnwrap().python_path).toEqual(['server/lib', 'vendor']);
  });

  it('refuses a directory outside the install root, and any interpreter but Python', () => {
    expect(withPythonPath(python, ['../lib'], 'main.py')._unsafeUnwrapErr().details).toMatchObject({ reason: 'path_traversal' });
    expect(withPythonPath(python, ['/usr/lib/python3/dist-packages'], 'main.py')._unsafeUnwrapErr().details).toMatchObject({ reason: 'absolute_path' });
    expect(withPythonPath({ ...python, kind: 'node' }, ['lib'], 'main.js')._unsafeUnwrapErr().code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
    expect(withPythonPath(undefined, ['lib'], 'server')._unsafeUnwrapErr().code).toBe('PLUGIN_EXECUTABLE_UNTRUSTED');
  });
});

describe('a recorded binding', () => {
  it('is inconsistent when its search path was edited to leave the install root', () => {
    expect(checkRecordShape(record({ ...python, python_path: ['server/lib'] })).isOk()).toBe(true);
    for (const edited of [['../../etc'], ['/usr/lib/python3/dist-packages'], ['server/../..']]) {
      expect(checkRecordShape(record({ ...python, python_path: edited }))._unsafeUnwrapErr().details, edited.join()).toMatchObject({ reason: 'binding_inconsistent' });
    }
  });
});

describe('the bootstrap', () => {
  it('carries the search path as a Python list of the absolute directories', () => {
    expect(pythonVerifiedMainProgram(3, ['/root/install/server/lib'])).toMatch(/_run_verified_main\(3, \["\/root\/install\/server\/lib"\]\)\n$/);
    expect(pythonVerifiedMainProgram(3)).toMatch(/_run_verified_main\(3, \[\]\)\n$/);
  });
});
