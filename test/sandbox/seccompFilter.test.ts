import { describe, expect, it } from 'vitest';
import { pluginSeccompFilter } from '../../src/sandbox/seccompFilter.js';

const unixSocketDenyFilter = (arch: string): Buffer | undefined => pluginSeccompFilter(false, arch);

const ALLOW = 0x7fff0000;
const EPERM = 0x00050001;
const ENOSYS = 0x00050026;
const X86_64 = 0xc000003e;
const I386 = 0x40000003;
const AARCH64 = 0xc00000b7;
const ARM = 0x40000028;
const AF_INET = 2;
const SOCK_STREAM = 1;
const MSG_FASTOPEN = 0x20000000;
const MSG_DONTWAIT = 0x40;

/** A classic-BPF interpreter for the instructions the filter uses, over struct seccomp_data. */
function evaluate(program: Buffer, arch: number, nr: number, ...args: number[]): number {
  const data: Record<number, number> = { 0: nr >>> 0, 4: arch >>> 0 };
  // Each argument is 8 bytes from offset 16; the filter reads the low 32 bits (little-endian: the first word).
  args.forEach((arg, i) => (data[16 + 8 * i] = arg >>> 0));
  let acc = 0;
  for (let pc = 0; pc < program.length / 8; ) {
    const code = program.readUInt16LE(pc * 8);
    const jt = program.readUInt8(pc * 8 + 2);
    const jf = program.readUInt8(pc * 8 + 3);
    const k = program.readUInt32LE(pc * 8 + 4);
    if (code === 0x20) acc = data[k] ?? 0;
    else if (code === 0x06) return k;
    else if (code === 0x15) { pc += 1 + (acc === k ? jt : jf); continue; }
    else if (code === 0x35) { pc += 1 + (acc >= k ? jt : jf); continue; }
    else if (code === 0x45) { pc += 1 + ((acc & k) !== 0 ? jt : jf); continue; }
    else throw new Error(`unexpected opcode ${code}`);
    pc++;
  }
  throw new Error('fell off the end of the program');
}

describe('unixSocketDenyFilter', () => {
  it('x86-64: refuses AF_UNIX sockets and io_uring, allows other sockets and socketpair', () => {
    const p = unixSocketDenyFilter('x64')!;
    expect(evaluate(p, X86_64, 41, 1)).toBe(EPERM); // socket(AF_UNIX)
    expect(evaluate(p, X86_64, 41, 40)).toBe(EPERM); // socket(AF_VSOCK): no network namespace confines it
    expect(evaluate(p, X86_64, 41, 2)).toBe(ALLOW); // socket(AF_INET): the network namespace confines it
    expect(evaluate(p, X86_64, 53, 1)).toBe(ALLOW); // socketpair(AF_UNIX)
    expect(evaluate(p, X86_64, 42, 0)).toBe(ALLOW); // connect
    for (const nr of [425, 426, 427]) expect(evaluate(p, X86_64, nr)).toBe(ENOSYS);
    expect(evaluate(p, X86_64, 0x40000000 + 41, 1)).toBe(ENOSYS); // x32 ABI
  });

  it('x86-64 host: 32-bit processes cannot use socketcall or socket(AF_UNIX)', () => {
    const p = unixSocketDenyFilter('x64')!;
    expect(evaluate(p, I386, 102, 1)).toBe(EPERM);
    expect(evaluate(p, I386, 359, 1)).toBe(EPERM);
    expect(evaluate(p, I386, 359, 2)).toBe(ALLOW);
    expect(evaluate(p, AARCH64, 198, 1)).toBe(ENOSYS); // foreign architecture: nothing
  });

  // Numbers from each architecture's kernel syscall table: socket, and each send with the index of its flags argument.
  it.each([
    ['x86-64', 'x64', X86_64, 41, [[44, 3], [46, 2], [307, 3]]],
    ['i386 on an x86-64 host', 'x64', I386, 359, [[369, 3], [370, 2], [345, 3]]],
    ['aarch64', 'arm64', AARCH64, 198, [[206, 3], [211, 2], [269, 3]]],
    ['32-bit ARM on an arm64 host', 'arm64', ARM, 281, [[290, 3], [296, 2], [374, 3], [289, 3]]],
  ] as const)('%s: refuses MPTCP and SMC stream sockets and sends with MSG_FASTOPEN, allows TCP and other send flags', (_name, host, arch, socket, sends) => {
    const p = unixSocketDenyFilter(host)!;
    expect(evaluate(p, arch, socket, AF_INET, SOCK_STREAM, 262)).toBe(EPERM); // IPPROTO_MPTCP
    expect(evaluate(p, arch, socket, AF_INET, SOCK_STREAM, 256)).toBe(EPERM); // IPPROTO_SMC
    expect(evaluate(p, arch, socket, AF_INET, SOCK_STREAM, 6)).toBe(ALLOW); // IPPROTO_TCP
    expect(evaluate(p, arch, socket, AF_INET, SOCK_STREAM, 0)).toBe(ALLOW);
    for (const [nr, flagsArg] of sends) {
      const withFlags = (flags: number): number[] => Array.from({ length: 6 }, (_, i) => (i === flagsArg ? flags : 0));
      expect(evaluate(p, arch, nr, ...withFlags(MSG_FASTOPEN | MSG_DONTWAIT)), `syscall ${nr}`).toBe(EPERM);
      expect(evaluate(p, arch, nr, ...withFlags(MSG_DONTWAIT)), `syscall ${nr}`).toBe(ALLOW);
      // The flag in another argument than the flags' is not a Fast Open send.
      expect(evaluate(p, arch, nr, ...withFlags(0).map((_, i) => (i === (flagsArg === 2 ? 3 : 2) ? MSG_FASTOPEN : 0))), `syscall ${nr}`).toBe(ALLOW);
    }
    // With network the plugin's sends and sockets are the namespace's business: nothing is refused.
    const networked = pluginSeccompFilter(true, host)!;
    expect(evaluate(networked, arch, socket, AF_INET, SOCK_STREAM, 262)).toBe(ALLOW);
    expect(evaluate(networked, arch, sends[0][0], 0, 0, 0, MSG_FASTOPEN)).toBe(ALLOW);
  });

  // Creating a socket of a family or protocol the kernel has not loaded loads its module, reached by any plugin.
  it.each([
    ['x86-64', 'x64', X86_64, 41],
    ['i386 on an x86-64 host', 'x64', I386, 359],
    ['aarch64', 'arm64', AARCH64, 198],
    ['32-bit ARM on an arm64 host', 'arm64', ARM, 281],
  ] as const)('%s: socket() takes only the listed families and netlink protocols, and without network the listed inet protocols', (_name, host, arch, socket) => {
    const [AF_UNIX, AF_INET6, AF_NETLINK, AF_PACKET, AF_RDS, AF_CAN, AF_TIPC, AF_ALG, AF_VSOCK] = [1, 10, 16, 17, 21, 29, 30, 38, 40];
    const SOCK_DGRAM = 2;
    for (const network of [false, true]) {
      const p = pluginSeccompFilter(network, host)!;
      for (const family of [AF_PACKET, AF_RDS, AF_CAN, AF_TIPC, AF_ALG, AF_VSOCK, 0, 46]) expect(evaluate(p, arch, socket, family, SOCK_DGRAM, 0), `family ${family}`).toBe(EPERM);
      for (const family of [AF_INET, AF_INET6, AF_NETLINK]) expect(evaluate(p, arch, socket, family, SOCK_DGRAM, 0), `family ${family}`).toBe(ALLOW);
      expect(evaluate(p, arch, socket, AF_UNIX, SOCK_STREAM, 0)).toBe(network ? ALLOW : EPERM);
      for (const protocol of [1, 6, 17, 58]) expect(evaluate(p, arch, socket, AF_INET6, SOCK_DGRAM, protocol), `protocol ${protocol}`).toBe(ALLOW);
      // SCTP, DCCP, UDP-Lite: modules of their own; with network the plugin may use what the host's kernel offers.
      for (const protocol of [132, 33, 136]) expect(evaluate(p, arch, socket, AF_INET, SOCK_STREAM, protocol), `protocol ${protocol}`).toBe(network ? ALLOW : EPERM);
      // Netlink: route, sock_diag, audit, uevents and generic; iSCSI, XFRM, netfilter, RDMA and crypto load modules or need capabilities.
      for (const protocol of [0, 4, 9, 16]) expect(evaluate(p, arch, socket, AF_NETLINK, SOCK_DGRAM, protocol), `netlink ${protocol}`).toBe(ALLOW);
      // The host's device events (uevents), which /sys and /run hide from every plugin: with network only.
      expect(evaluate(p, arch, socket, AF_NETLINK, SOCK_DGRAM, 15), 'netlink 15').toBe(network ? ALLOW : EPERM);
      for (const protocol of [6, 8, 12, 20, 21]) expect(evaluate(p, arch, socket, AF_NETLINK, SOCK_DGRAM, protocol), `netlink ${protocol}`).toBe(EPERM);
    }
  });

  // socketpair() of a family looks the family up (loading its module) before finding it makes no pairs.
  it.each([
    ['x86-64', 'x64', X86_64, 53],
    ['i386 on an x86-64 host', 'x64', I386, 360],
    ['aarch64', 'arm64', AARCH64, 199],
    ['32-bit ARM on an arm64 host', 'arm64', ARM, 288],
  ] as const)('%s: socketpair() takes only AF_UNIX, with and without network', (_name, host, arch, socketpair) => {
    const [AF_UNIX, AF_INET6, AF_RDS, AF_CAN, AF_TIPC, AF_ALG, AF_VSOCK, AF_X25] = [1, 10, 21, 29, 30, 38, 40, 9];
    for (const network of [false, true]) {
      const p = pluginSeccompFilter(network, host)!;
      expect(evaluate(p, arch, socketpair, AF_UNIX, SOCK_STREAM, 0), `network ${network}`).toBe(ALLOW);
      for (const family of [AF_INET, AF_INET6, AF_RDS, AF_CAN, AF_TIPC, AF_ALG, AF_VSOCK, AF_X25, 0, 46]) {
        expect(evaluate(p, arch, socketpair, family, SOCK_STREAM, 0), `family ${family}, network ${network}`).toBe(EPERM);
      }
    }
  });

  it('i386 on an x86-64 host: socketcall creates no socket with or without network (its family lies in memory), and with network keeps its other calls', () => {
    const [SYS_SOCKET, SYS_CONNECT, SYS_SOCKETPAIR, SYS_SEND, SYS_RECVMSG] = [1, 3, 8, 9, 17];
    for (const network of [false, true]) {
      const p = pluginSeccompFilter(network, 'x64')!;
      for (const call of [SYS_SOCKET, SYS_SOCKETPAIR]) expect(evaluate(p, I386, 102, call), `call ${call}, network ${network}`).toBe(EPERM);
      for (const call of [SYS_CONNECT, SYS_SEND, SYS_RECVMSG]) expect(evaluate(p, I386, 102, call), `call ${call}, network ${network}`).toBe(network ? ALLOW : EPERM);
    }
  });

  it('arm64: the same rules with its own numbers', () => {
    const p = unixSocketDenyFilter('arm64')!;
    expect(evaluate(p, AARCH64, 198, 1)).toBe(EPERM);
    expect(evaluate(p, AARCH64, 198, 10)).toBe(ALLOW);
    expect(evaluate(p, AARCH64, 425)).toBe(ENOSYS);
  });

  it('refuses the keyring calls with and without network, io_uring too (its socket opcode skips the family list), and leaves Unix sockets alone with network', () => {
    for (const network of [false, true]) {
      const x64 = pluginSeccompFilter(network, 'x64')!;
      for (const nr of [248, 249, 250]) expect(evaluate(x64, X86_64, nr)).toBe(EPERM);
      for (const nr of [286, 287, 288]) expect(evaluate(x64, I386, nr)).toBe(EPERM);
      const arm64 = pluginSeccompFilter(network, 'arm64')!;
      for (const nr of [217, 218, 219]) expect(evaluate(arm64, AARCH64, nr)).toBe(EPERM);
    }
    const networked = pluginSeccompFilter(true, 'x64')!;
    expect(evaluate(networked, X86_64, 41, 1)).toBe(ALLOW);
    for (const nr of [425, 426, 427]) expect(evaluate(networked, X86_64, nr)).toBe(ENOSYS);
    expect(evaluate(pluginSeccompFilter(true, 'arm64')!, AARCH64, 425)).toBe(ENOSYS);
    expect(evaluate(networked, I386, 102, 3)).toBe(ALLOW); // socketcall(SYS_CONNECT)
    expect(evaluate(networked, X86_64, 0x40000000 + 41, 1)).toBe(ENOSYS);
  });

  it('refuses a new user namespace through clone or unshare on every table, and clone3 whose flags it cannot read', () => {
    const CLONE_NEWUSER = 0x10000000;
    const THREAD = 0x3d0f00; // what pthread_create passes
    for (const network of [false, true]) {
      const x64 = pluginSeccompFilter(network, 'x64')!;
      for (const [arch, nrs] of [[X86_64, [56, 272]], [I386, [120, 310]]] as const) {
        for (const nr of nrs) {
          expect(evaluate(x64, arch, nr, CLONE_NEWUSER | 17)).toBe(EPERM);
          expect(evaluate(x64, arch, nr, THREAD)).toBe(ALLOW);
        }
      }
      expect(evaluate(x64, X86_64, 435)).toBe(ENOSYS);
      const arm64 = pluginSeccompFilter(network, 'arm64')!;
      for (const nr of [220, 97]) expect(evaluate(arm64, AARCH64, nr, CLONE_NEWUSER)).toBe(EPERM);
      expect(evaluate(arm64, AARCH64, 220, 17)).toBe(ALLOW);
      expect(evaluate(arm64, AARCH64, 435)).toBe(ENOSYS);
    }
  });

  it('has no filter for an architecture without a syscall table (spawning must fail closed)', () => {
    expect(unixSocketDenyFilter('mips')).toBeUndefined();
    expect(pluginSeccompFilter(true, 'mips')).toBeUndefined();
  });
});
