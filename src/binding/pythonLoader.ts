/**
 * Python finds a script's sibling modules through `sys.path[0]`, the
 * script's directory. Running the verified copy as `/proc/self/fd/3` would
 * make that directory `/proc/self/fd`, so a CPython interpreter is instead
 * given a short `-c` program (in argv, so nothing on disk can be swapped)
 * that reads the source from the inherited descriptor and runs it as
 * `__main__` under the script's own path: `sys.argv`, `__file__` and
 * `sys.path` are what a plain `python script` would give (with `-I` or `-P`
 * in the `#!` line, no script directory is added, as Python does). The
 * working directory, which `-c` puts first on `sys.path`, is removed before
 * the program imports anything, so no file in the install root can stand in
 * for a standard module. Child processes that re-run the main script by path
 * (`multiprocessing` with spawn or forkserver) or start `sys.executable`
 * (the interpreter's descriptor path) do not work.
 *
 * Bytecode is never written: the install root is read-only in the sandbox,
 * and without one a `__pycache__` the interpreter left there would be a
 * file the package tree pin does not list.
 */

const RUN_VERIFIED_MAIN = `
def _run_verified_main(fd, search_path):
    import sys
    # A .pyc written next to a module would be a file the package tree pin never saw (refused at the next start).
    sys.dont_write_bytecode = True
    # -c puts the working directory (the install root) first on sys.path: drop it before importing anything else.
    script_dir_first = not (sys.flags.isolated or getattr(sys.flags, 'safe_path', False))
    if script_dir_first and sys.path and sys.path[0] == '':
        del sys.path[0]
    import builtins, os, stat
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        raise SystemExit('mcp-plugin-host: descriptor %d is not the verified main module' % fd)
    with os.fdopen(fd, 'rb') as f:
        source = f.read()
    script = sys.argv[1]
    del sys.argv[0]
    # The pinned search path goes where PYTHONPATH would: after the script's directory, before the standard library.
    sys.path[0:0] = search_path
    if script_dir_first:
        sys.path.insert(0, os.path.dirname(os.path.realpath(script)))
    code = compile(source, script, 'exec')
    main = sys.modules['__main__'].__dict__
    main.clear()
    main.update(__name__='__main__', __file__=script, __builtins__=builtins, __doc__=None,
                __loader__=None, __package__=None, __spec__=None, __cached__=None)
    exec(code, main)
`;

/**
 * The `-c` argument that makes CPython run the script whose verified source
 * is on descriptor `fd`; the script's path follows it in argv. `searchPath`
 * (absolute directories) goes on `sys.path` where `PYTHONPATH` would put it.
 */
export function pythonVerifiedMainProgram(fd: number, searchPath: readonly string[] = []): string {
  // A JSON array of strings is also a Python list literal of the same strings.
  return `${RUN_VERIFIED_MAIN}_run_verified_main(${fd}, ${JSON.stringify(searchPath)})\n`;
}
