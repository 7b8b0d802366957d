import socketFamilies from '../../etc/sandbox/socket-families.json' with { type: 'json' };

/**
 * A classic-BPF seccomp program for `bwrap --seccomp`. A new network
 * namespace already cuts TCP, UDP, DNS and abstract Unix sockets, but a Unix
 * socket *file* is reachable from any namespace that can see its path. So with
 * `network: false` the sandbox refuses to create `AF_UNIX` sockets at all
 * (a `socketpair` of them stays allowed: it cannot reach anything outside), `AF_VSOCK`
 * ones (no network namespace confines them: on a virtual machine they reach
 * its hypervisor's services), the
 * multiplexed `socketcall` of 32-bit x86, and MPTCP and SMC sockets and sends with
 * `MSG_FASTOPEN`, which step around the Landlock launcher's TCP rules
 * inside the namespace.
 *
 * With or without network, `socket()` takes only the families and netlink
 * protocols (and without network the inet protocols) listed in
 * `etc/sandbox/socket-families.json` (the device events of
 * `NETLINK_KOBJECT_UEVENT` with network only), and `socketpair()` only `AF_UNIX`:
 * any other made the kernel load that protocol's module for the plugin (the
 * kernel looks a family up before it finds the family makes no pairs). With
 * network, 32-bit x86's `socketcall` may not create sockets (its arguments,
 * the family among them, lie in memory a filter cannot read). So
 * io_uring is refused (`ENOSYS`: runtimes fall back to ordinary calls) with
 * network too: its socket opcode creates a socket this filter never sees.
 *
 * Every plugin, with or without network, is refused the kernel keyring calls
 * (`add_key`, `request_key`, `keyctl`): keyrings belong to no namespace, and a
 * process keeps the session keyring of whoever started it across bubblewrap
 * and a change of user, possessing (reading, adding to) every key in it: the
 * host's Kerberos tickets, file-system and VPN keys. Nor may a plugin make a
 * user namespace of its own (`unshare` or `clone` with CLONE_NEWUSER): inside
 * one it holds every capability over its own network and mounts, which opens
 * the kernel code only privileged users reach (netfilter, traffic control,
 * file systems), the usual way out of a sandbox. `clone3` passes its flags in
 * memory a filter cannot read, so it fails with ENOSYS and the C library
 * falls back to `clone`.
 *
 * Nor may a plugin reach into another process running as its user
 * (`ptrace`, `process_vm_readv`, `process_vm_writev`, `pidfd_getfd`, `kcmp`):
 * under a host that is not root, bubblewrap's own process 1 of the sandbox
 * runs as the plugin's user too, and nothing of the sandbox but the
 * plugin's own tree is the plugin's to reach into.
 */

// Instruction classes and fields (linux/bpf_common.h).
const BPF_LD_W_ABS = 0x20;
const BPF_JMP_JEQ_K = 0x15;
const BPF_JMP_JGE_K = 0x35;
const BPF_JMP_JSET_K = 0x45;
const BPF_RET_K = 0x06;

// struct seccomp_data offsets.
const OFFSET_NR = 0;
const OFFSET_ARCH = 4;
const OFFSET_ARG0_LOW = 16;
const OFFSET_ARG2_LOW = 32;
const ARG_BYTES = 8;

const SECCOMP_RET_ALLOW = 0x7fff0000;
const SECCOMP_RET_ERRNO = 0x00050000;
const EPERM = 1;
const ENOSYS = 38;
const X32_SYSCALL_BIT = 0x40000000;
const values = (entries: readonly { readonly value: number }[]): number[] => entries.map((entry) => entry.value);
const INET_FAMILIES = values(socketFamilies.inet);
const NETLINK_FAMILY = socketFamilies.netlink.value;
const NETLINK_PROTOCOLS = values(socketFamilies.netlinkProtocols);
// The kernel's device events: a plugin with network only, which is in the host's network namespace anyway.
const NETWORK_NETLINK_PROTOCOLS = [...NETLINK_PROTOCOLS, ...values(socketFamilies.withNetworkNetlinkProtocols)];
const NETWORK_FAMILIES = values(socketFamilies.withNetwork);
const OFFLINE_INET_PROTOCOLS = values(socketFamilies.offlineInetProtocols);
const SOCKETPAIR_FAMILY = socketFamilies.socketpair.value;
// socketcall's call numbers (linux/net.h) that create sockets: its arguments lie in memory, so their family cannot be read.
const SOCKETCALL_SOCKET = 1;
const SOCKETCALL_SOCKETPAIR = 8;
// TCP Fast Open: a send with this flag connects an unconnected socket without connect(), which Landlock checks.
const MSG_FASTOPEN = 0x20000000;
const CLONE_NEWUSER = 0x10000000;

// io_uring_setup, io_uring_enter, io_uring_register: one number on every architecture.
const IO_URING_SYSCALLS = [425, 426, 427];
const CLONE3 = 435;
// pidfd_getfd: one number on every architecture.
const PIDFD_GETFD = 438;

/** Syscall numbers of one audit architecture. */
interface ArchTable {
  readonly auditArch: number;
  readonly socket: number;
  readonly socketpair: number;
  /** add_key, request_key, keyctl. */
  readonly keyring: readonly number[];
  /** ptrace, process_vm_readv, process_vm_writev, kcmp: reaching into another process of the same user. */
  readonly processAccess: readonly number[];
  /** clone and unshare, whose first argument holds the namespace flags. */
  readonly namespaceFlags: readonly number[];
  /** sendto, sendmsg, sendmmsg (and ARM's send), each with the index of the argument holding its flags. */
  readonly sends: readonly (readonly [number, number])[];
  readonly socketcall?: number;
  readonly rejectX32?: boolean;
}

const X86_64: ArchTable = { auditArch: 0xc000003e, socket: 41, socketpair: 53, keyring: [248, 249, 250], processAccess: [101, 310, 311, 312], namespaceFlags: [56, 272], sends: [[44, 3], [46, 2], [307, 3]], rejectX32: true };
const I386: ArchTable = { auditArch: 0x40000003, socket: 359, socketpair: 360, keyring: [286, 287, 288], processAccess: [26, 347, 348, 349], namespaceFlags: [120, 310], sends: [[369, 3], [370, 2], [345, 3]], socketcall: 102 };
const AARCH64: ArchTable = { auditArch: 0xc00000b7, socket: 198, socketpair: 199, keyring: [217, 218, 219], processAccess: [117, 270, 271, 272], namespaceFlags: [220, 97], sends: [[206, 3], [211, 2], [269, 3]] };
const ARM: ArchTable = { auditArch: 0x40000028, socket: 281, socketpair: 288, keyring: [309, 310, 311], processAccess: [26, 376, 377, 378], namespaceFlags: [120, 337], sends: [[290, 3], [296, 2], [374, 3], [289, 3]] };

/** The architectures a process of a given Node `process.arch` host may run, native first. */
const TABLES_BY_HOST_ARCH: Readonly<Record<string, readonly ArchTable[]>> = {
  x64: [X86_64, I386],
  arm64: [AARCH64, ARM],
};

type Instruction = { code: number; jt: number | string; jf: number | string; k: number } | { label: string };

const load = (offset: number): Instruction => ({ code: BPF_LD_W_ABS, jt: 0, jf: 0, k: offset });
const jumpIfEqual = (k: number, target: string): Instruction => ({ code: BPF_JMP_JEQ_K, jt: target, jf: 0, k });
const jumpIfAtLeast = (k: number, target: string): Instruction => ({ code: BPF_JMP_JGE_K, jt: target, jf: 0, k });
const jumpIfAnyBit = (k: number, target: string): Instruction => ({ code: BPF_JMP_JSET_K, jt: target, jf: 0, k });
const ret = (k: number): Instruction => ({ code: BPF_RET_K, jt: 0, jf: 0, k });
const label = (name: string): Instruction => ({ label: name });

/**
 * The socket() check, jumped to from each architecture's socket syscall: a family of the list, a netlink protocol of
 * the list, and without network an inet protocol of the list; anything else EPERM, before the kernel could load a
 * module for it.
 */
function socketBlock(index: number, network: boolean): Instruction[] {
  const [inetProtocol, netlinkProtocol] = [`inetProtocol${index}`, `netlinkProtocol${index}`];
  const out: Instruction[] = [label(`family${index}`), load(OFFSET_ARG0_LOW)];
  for (const family of INET_FAMILIES) out.push(jumpIfEqual(family, network ? 'allow' : inetProtocol));
  out.push(jumpIfEqual(NETLINK_FAMILY, netlinkProtocol));
  if (network) for (const family of NETWORK_FAMILIES) out.push(jumpIfEqual(family, 'allow'));
  out.push(ret(SECCOMP_RET_ERRNO | EPERM));
  const protocolCheck = (name: string, protocols: readonly number[]): Instruction[] => [
    label(name),
    load(OFFSET_ARG2_LOW),
    ...protocols.map((protocol) => jumpIfEqual(protocol, 'allow')),
    ret(SECCOMP_RET_ERRNO | EPERM),
  ];
  out.push(...protocolCheck(netlinkProtocol, network ? NETWORK_NETLINK_PROTOCOLS : NETLINK_PROTOCOLS));
  if (!network) out.push(...protocolCheck(inetProtocol, OFFLINE_INET_PROTOCOLS));
  return out;
}

function archBlock(table: ArchTable, index: number, denyUnixSockets: boolean): Instruction[] {
  const checkFamily = `family${index}`;
  const checkFlags = `flags${index}`;
  const checkPairFamily = `pairFamily${index}`;
  const checkSocketcall = `socketcall${index}`;
  const out: Instruction[] = [load(OFFSET_NR)];
  if (table.rejectX32) out.push(jumpIfAtLeast(X32_SYSCALL_BIT, 'enosys'));
  for (const nr of table.keyring) out.push(jumpIfEqual(nr, 'eperm'));
  for (const nr of [...table.processAccess, PIDFD_GETFD]) out.push(jumpIfEqual(nr, 'eperm'));
  for (const nr of table.namespaceFlags) out.push(jumpIfEqual(nr, checkFlags));
  out.push(jumpIfEqual(CLONE3, 'enosys'));
  const namespaceBlock = [label(checkFlags), load(OFFSET_ARG0_LOW), jumpIfAnyBit(CLONE_NEWUSER, 'eperm'), ret(SECCOMP_RET_ALLOW)];
  out.push(jumpIfEqual(table.socket, checkFamily), jumpIfEqual(table.socketpair, checkPairFamily));
  for (const nr of IO_URING_SYSCALLS) out.push(jumpIfEqual(nr, 'enosys'));
  const pairBlock = [label(checkPairFamily), load(OFFSET_ARG0_LOW), jumpIfEqual(SOCKETPAIR_FAMILY, 'allow'), ret(SECCOMP_RET_ERRNO | EPERM)];
  if (!denyUnixSockets) {
    if (table.socketcall === undefined) return [...out, ret(SECCOMP_RET_ALLOW), ...socketBlock(index, true), ...pairBlock, ...namespaceBlock];
    // With network, socketcall's other calls (connect, send, ...) stay: 32-bit programs built for kernels before 4.3 use nothing else.
    out.push(jumpIfEqual(table.socketcall, checkSocketcall), ret(SECCOMP_RET_ALLOW));
    const socketcallBlock = [
      label(checkSocketcall),
      load(OFFSET_ARG0_LOW),
      jumpIfEqual(SOCKETCALL_SOCKET, 'eperm'),
      jumpIfEqual(SOCKETCALL_SOCKETPAIR, 'eperm'),
      ret(SECCOMP_RET_ALLOW),
    ];
    return [...out, ...socketBlock(index, true), ...pairBlock, ...socketcallBlock, ...namespaceBlock];
  }
  if (table.socketcall !== undefined) out.push(jumpIfEqual(table.socketcall, 'eperm'));
  for (const [nr, flagsArg] of table.sends) out.push(jumpIfEqual(nr, `sendFlags${index}_${flagsArg}`));
  out.push(ret(SECCOMP_RET_ALLOW));
  for (const flagsArg of new Set(table.sends.map(([, arg]) => arg))) {
    out.push(label(`sendFlags${index}_${flagsArg}`), load(OFFSET_ARG0_LOW + flagsArg * ARG_BYTES), jumpIfAnyBit(MSG_FASTOPEN, 'eperm'), ret(SECCOMP_RET_ALLOW));
  }
  return [...out, ...socketBlock(index, false), ...pairBlock, ...namespaceBlock];
}

function assemble(program: readonly Instruction[]): Buffer {
  const positions = new Map<string, number>();
  const real: Exclude<Instruction, { label: string }>[] = [];
  for (const ins of program) {
    if ('label' in ins) positions.set(ins.label, real.length);
    else real.push(ins);
  }
  const offset = (target: number | string, at: number): number => {
    if (typeof target === 'number') return target;
    const distance = positions.get(target)! - at - 1;
    if (distance < 0 || distance > 255) throw new RangeError(`seccomp jump to ${target} out of range`);
    return distance;
  };
  const out = Buffer.alloc(real.length * 8);
  real.forEach((ins, i) => {
    // struct sock_filter { u16 code; u8 jt; u8 jf; u32 k; } in host byte order (little-endian on x64 and arm64).
    out.writeUInt16LE(ins.code, i * 8);
    out.writeUInt8(offset(ins.jt, i), i * 8 + 2);
    out.writeUInt8(offset(ins.jf, i), i * 8 + 3);
    out.writeUInt32LE(ins.k >>> 0, i * 8 + 4);
  });
  return out;
}

/**
 * The compiled filter of every plugin for a host architecture
 * (`process.arch`): keyring calls, calls into other processes, new user namespaces, io_uring and sockets of families
 * and protocols off the list refused, and with `network: false` Unix sockets too. `undefined` when this library has no syscall
 * table for the architecture, in which case the sandbox cannot be enforced
 * and spawning must fail closed.
 */
export function pluginSeccompFilter(network: boolean, hostArch: string = process.arch): Buffer | undefined {
  const tables = TABLES_BY_HOST_ARCH[hostArch];
  if (tables === undefined) return undefined;
  const program: Instruction[] = [load(OFFSET_ARCH)];
  tables.forEach((table, i) => program.push(jumpIfEqual(table.auditArch, `arch${i}`)));
  // A process of an architecture we have no table for gets nothing.
  program.push(ret(SECCOMP_RET_ERRNO | ENOSYS));
  tables.forEach((table, i) => program.push(label(`arch${i}`), ...archBlock(table, i, !network)));
  program.push(label('eperm'), ret(SECCOMP_RET_ERRNO | EPERM), label('enosys'), ret(SECCOMP_RET_ERRNO | ENOSYS), label('allow'), ret(SECCOMP_RET_ALLOW));
  return assemble(program);
}
