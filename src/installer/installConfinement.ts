/**
 * The confinement of the commands an install runs on a package's behalf
 * (pip, and the private environment's interpreter, which reads the `.pth`
 * files the package's wheels installed): under bubblewrap, with the system
 * directories and the interpreter's prefix read-only, the install root the
 * only writable tree, a private /tmp, no home directory, the well-known
 * secret files masked, no capabilities, and no network unless the caller
 * allowed a package index. Whatever such a command ends up running (a build
 * backend pip fetched, a `.pth` line) can then change nothing but the
 * package's own tree, which is pinned afterwards like any other file.
 */
import { existsSync, lstatSync, readlinkSync, realpathSync } from 'node:fs';
import { dirname } from 'node:path';
import { err, ok, type Result } from 'neverthrow';
import { hostError, type HostError } from '../errors/HostError.js';
import { SYSTEM_PATHS, isWithin } from '../sandbox/SandboxLayout.js';
import { DEFAULT_SECRET_PATHS, expandHome } from '../sandbox/secretLocations.js';
import settings from '../../etc/python-install.json' with { type: 'json' };

/** What one confined install command may touch. */
export interface InstallConfinement {
  /** The only writable tree (the install root). */
  readonly writable: string;
  /** The interpreter the command runs (its prefix is mounted read-only when outside the system directories). */
  readonly interpreter: string;
  /** Whether the command may use the network (a caller-allowed package index). */
  readonly network: boolean;
}

/**
 * The bubblewrap command line that runs `argv` confined as `confinement`
 * says, or `PLUGIN_PYTHON_INSTALL_FAILED` (`details.reason`
 * `no_confinement`) on Linux when no bubblewrap of
 * `etc/python-install.json` `bubblewrap` exists. Elsewhere the command runs
 * as it is (see docs/published-servers.md#python).
 */
export function confinedCommand(argv: readonly string[], confinement: InstallConfinement): Result<string[], HostError> {
  if (process.platform !== 'linux') return ok([...argv]);
  const bwrap = settings.bubblewrap.find((path) => existsSync(path));
  if (bwrap === undefined) {
    return err(
      hostError('PLUGIN_PYTHON_INSTALL_FAILED', `no bubblewrap (${settings.bubblewrap.join(', ')}) to confine pip with; a package's install never runs unconfined`, {
        details: { reason: 'no_confinement' },
      }),
    );
  }
  const args = ['--die-with-parent', '--new-session', '--unshare-all', '--cap-drop', 'ALL', ...(confinement.network ? ['--share-net'] : [])];
  const mounted: string[] = [];
  for (const path of SYSTEM_PATHS) {
    const entry = lstatSync(path, { throwIfNoEntry: false });
    if (entry === undefined) continue;
    if (entry.isSymbolicLink()) args.push('--symlink', readlinkSync(path), path);
    else {
      args.push('--ro-bind', path, path);
      mounted.push(path);
    }
  }
  const prefix = dirname(dirname(realpathSync(confinement.interpreter)));
  if (!mounted.some((tree) => isWithin(prefix, tree))) {
    args.push('--ro-bind', prefix, prefix);
    mounted.push(prefix);
  }
  if (confinement.network && existsSync('/etc/resolv.conf')) {
    const resolver = realpathSync('/etc/resolv.conf');
    if (!mounted.some((tree) => isWithin(resolver, tree))) args.push('--ro-bind', resolver, resolver);
  }
  for (const secret of DEFAULT_SECRET_PATHS.map((path) => expandHome(path))) {
    const entry = lstatSync(secret, { throwIfNoEntry: false });
    if (entry === undefined || !mounted.some((tree) => isWithin(secret, tree))) continue;
    if (entry.isDirectory()) args.push('--tmpfs', secret);
    else args.push('--ro-bind', '/dev/null', secret);
  }
  args.push('--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp', '--bind', confinement.writable, confinement.writable, '--chdir', confinement.writable, '--');
  return ok([bwrap, ...args, ...argv]);
}
