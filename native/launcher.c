/*
 * mcp-plugin-launcher: starts one plugin confined by namespaces, a Landlock
 * ruleset and the host's seccomp program, without bubblewrap. The host
 * (src/sandbox/landlockArgs.ts) writes the whole spec on the command line:
 *
 *   launcher [option...] -- program [arg...]
 *
 * In the launcher, before any fork: --cgroup FILE (repeatable: join by
 * writing 0, the writer itself, into a v1 group's tasks or a v2 group's cgroup.procs), --cgroup-into DIR (a v2
 * group the sandbox's process 1 is forked into, where the launcher itself stays), --rlimit-data BYTES, --rlimit-nproc N
 * (RLIMIT_CORE is always 0, soft and hard: no core file of a plugin),
 * --unshare-net, --egress-port PORT (with --unshare-net: the namespace's loopback is brought up and, where Landlock
 * handles TCP, the plugin may connect to PORT alone, the host's proxy address), --report FD (the sandbox's process 1,
 * as bubblewrap's --info-fd reports it: {"child-pid": N} in the host's pid space, then FD closed), --user UID GID (switch to it before the plugin runs; root
 * hosts), --parent PID (the host's pid: gone, the launcher stops), --seccomp FD (the program, read to its end right before exec; an
 * empty one refuses to run), --pass-fds N (the plugin keeps fds 3 to 3 + N - 1,
 * but those the launcher used), --chdir DIR, --shm BYTES (the size of the
 * sandbox's own /dev/shm, which is always mounted), --tmp BYTES (with --cover /tmp: that cover is the sandbox's own
 * writable /tmp, sticky and writable by every user like the /tmp it replaces, sized BYTES, never sealed).
 * Mounts, applied in order by the sandbox's process 1 inside fresh PID,
 * mount, IPC, UTS and control group namespaces, in a fresh root that holds of
 * the host's / only the top-level directories the options reach into (and the
 * host's top-level links into them), /proc and the covered directories: --cover DIR (an empty tmpfs over DIR),
 * --dir PATH (a directory inside a cover), --symlink TARGET PATH (a link inside a cover), --bind PATH ro|rw (the host's
 * tree at PATH, cloned before any mount; its mount point, a directory or a
 * file like the tree, is made when missing), --bind-fd FD PATH ro|rw, --file FD
 * PATH (a read-only copy of FD's bytes), --mask-dir PATH, --mask-file PATH,
 * --seal DIR (a cover made read-only). Landlock, in the plugin's process:
 * --allow PATH RIGHTS and --allow-fd FD RIGHTS, RIGHTS being letters of
 * r (read), x (execute), w (write, create, remove), d (device ioctl) and
 * ? (skip a PATH that does not exist).
 *
 * Two modes of its own, as the only options: --scope [--pass-fds N] -- program [arg...] (Landlock's abstract Unix
 * socket and signal scopes alone, every descriptor from 3 + N on closed, then the program: bubblewrap's plugins,
 * src/sandbox/backends.ts) and --landlock-abi (prints the kernel's Landlock ABI, 0 for none).
 *
 * Every failure prints one line "mcp-plugin-launcher: <step>: <reason>"
 * and exits 1 before the plugin ran.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <grp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <net/if.h>
#include <sys/mount.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif
#ifndef MOVE_MOUNT_F_EMPTY_PATH
#define MOVE_MOUNT_F_EMPTY_PATH 0x00000004
#endif
#ifndef MOVE_MOUNT_T_EMPTY_PATH
#define MOVE_MOUNT_T_EMPTY_PATH 0x00000040
#endif
#ifndef AT_RECURSIVE
#define AT_RECURSIVE 0x8000
#endif
#ifndef MOUNT_ATTR_RDONLY
#define MOUNT_ATTR_RDONLY 0x00000001
#endif
#ifndef MOUNT_ATTR_NOSUID
#define MOUNT_ATTR_NOSUID 0x00000002
#endif
#ifndef MOUNT_ATTR_NODEV
#define MOUNT_ATTR_NODEV 0x00000004
#endif
#ifndef MOUNT_ATTR_NOEXEC
#define MOUNT_ATTR_NOEXEC 0x00000008
#endif
#ifndef FSCONFIG_SET_STRING
#define FSCONFIG_SET_STRING 1
#endif
#ifndef FSCONFIG_CMD_CREATE
#define FSCONFIG_CMD_CREATE 6
#endif
#ifndef FSOPEN_CLOEXEC
#define FSOPEN_CLOEXEC 0x00000001
#endif
#ifndef FSMOUNT_CLOEXEC
#define FSMOUNT_CLOEXEC 0x00000001
#endif
#ifndef CLOSE_RANGE_UNSHARE
#define CLOSE_RANGE_UNSHARE (1U << 1)
#endif
#ifndef CLONE_INTO_CGROUP
#define CLONE_INTO_CGROUP 0x200000000ULL
#endif
#define RESOLVE_NO_MAGICLINKS 0x02
#define RESOLVE_NO_SYMLINKS 0x04

/* Landlock's ABI (include/uapi/linux/landlock.h), declared here: distribution headers lag the kernel. */
#define LL_CREATE_RULESET_VERSION (1U << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2
#define LL_FS_EXECUTE (1ULL << 0)
#define LL_FS_WRITE_FILE (1ULL << 1)
#define LL_FS_READ_FILE (1ULL << 2)
#define LL_FS_READ_DIR (1ULL << 3)
#define LL_FS_REMOVE_DIR (1ULL << 4)
#define LL_FS_REMOVE_FILE (1ULL << 5)
#define LL_FS_MAKE_CHAR (1ULL << 6)
#define LL_FS_MAKE_DIR (1ULL << 7)
#define LL_FS_MAKE_REG (1ULL << 8)
#define LL_FS_MAKE_SOCK (1ULL << 9)
#define LL_FS_MAKE_FIFO (1ULL << 10)
#define LL_FS_MAKE_BLOCK (1ULL << 11)
#define LL_FS_MAKE_SYM (1ULL << 12)
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
#define LL_FS_IOCTL_DEV (1ULL << 15)
#define LL_NET_BIND_TCP (1ULL << 0)
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LL_SCOPE_SIGNAL (1ULL << 1)
#define LL_FS_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

struct ll_ruleset_attr {
  uint64_t handled_access_fs;
  uint64_t handled_access_net;
  uint64_t scoped;
};

struct ll_path_beneath_attr {
  uint64_t allowed_access;
  int32_t parent_fd;
} __attribute__((packed));

struct ll_net_port_attr {
  uint64_t allowed_access;
  uint64_t port;
} __attribute__((packed));

struct launcher_mount_attr {
  uint64_t attr_set;
  uint64_t attr_clr;
  uint64_t propagation;
  uint64_t userns_fd;
};

/* clone3's argument (include/uapi/linux/sched.h), up to its cgroup member. */
struct launcher_clone_args {
  uint64_t flags;
  uint64_t pidfd;
  uint64_t child_tid;
  uint64_t parent_tid;
  uint64_t exit_signal;
  uint64_t stack;
  uint64_t stack_size;
  uint64_t tls;
  uint64_t set_tid;
  uint64_t set_tid_size;
  uint64_t cgroup;
};

struct launcher_open_how {
  uint64_t flags;
  uint64_t mode;
  uint64_t resolve;
};

#define MAX_OPS 512
#define MAX_GROUPS 8

enum op_kind { OP_COVER, OP_DIR, OP_SYMLINK, OP_BIND, OP_BIND_FD, OP_FILE, OP_MASK_DIR, OP_MASK_FILE, OP_SEAL, OP_ALLOW, OP_ALLOW_FD };

struct op {
  enum op_kind kind;
  const char *path;
  int fd;
  int writable;
  const char *rights;
  const char *target; /* OP_SYMLINK */
  int clone; /* OP_BIND: the tree cloned before any mount */
};

struct spec {
  const char *groups[MAX_GROUPS];
  int group_count;
  const char *into_group;
  long long rlimit_data;
  long long rlimit_nproc;
  int unshare_net;
  long long egress_port;
  int report_fd;
  int switch_user;
  uid_t uid;
  gid_t gid;
  int seccomp_fd;
  const char *chdir_path;
  long long shm_bytes;
  long long tmp_bytes;
  int pass_fds;
  pid_t parent;
  struct op ops[MAX_OPS];
  int op_count;
  char **argv;
};

static void fail(const char *step, const char *format, ...) {
  char reason[512];
  va_list args;
  va_start(args, format);
  vsnprintf(reason, sizeof reason, format, args);
  va_end(args);
  dprintf(2, "mcp-plugin-launcher: %s: %s\n", step, reason);
  _exit(1);
}

static void fail_errno(const char *step, const char *what) { fail(step, "%s: %s", what, strerror(errno)); }

static long long number(const char *text, const char *option) {
  char *end;
  errno = 0;
  long long value = strtoll(text, &end, 10);
  if (errno != 0 || *end != '\0' || end == text || value < 0) fail("spec", "%s needs a non-negative integer, got '%s'", option, text);
  return value;
}

static int access_mode(const char *text) {
  if (strcmp(text, "ro") == 0) return 0;
  if (strcmp(text, "rw") == 0) return 1;
  fail("spec", "expected ro or rw, got '%s'", text);
  return 0;
}

static struct op *add_op(struct spec *spec, enum op_kind kind) {
  if (spec->op_count == MAX_OPS) fail("spec", "more than %d mounts and grants", MAX_OPS);
  struct op *op = &spec->ops[spec->op_count++];
  memset(op, 0, sizeof *op);
  op->kind = kind;
  op->fd = -1;
  op->clone = -1;
  return op;
}

static void require_absolute(const char *path) {
  if (path[0] != '/') fail("spec", "path must be absolute: %s", path);
}

static void parse(int argc, char **argv, struct spec *spec) {
  memset(spec, 0, sizeof *spec);
  spec->rlimit_data = -1;
  spec->rlimit_nproc = -1;
  spec->seccomp_fd = -1;
  spec->shm_bytes = -1;
  spec->tmp_bytes = -1;
  spec->egress_port = -1;
  spec->report_fd = -1;
  int i = 1;
  for (; i < argc; i++) {
    const char *o = argv[i];
    int left = argc - i - 1;
#define NEED(n) \
  if (left < (n)) fail("spec", "%s needs %d argument(s)", o, (n))
    if (strcmp(o, "--") == 0) break;
    if (strcmp(o, "--cgroup") == 0) {
      NEED(1);
      if (spec->group_count == MAX_GROUPS) fail("spec", "more than %d control groups", MAX_GROUPS);
      spec->groups[spec->group_count++] = argv[++i];
    } else if (strcmp(o, "--cgroup-into") == 0) {
      NEED(1);
      spec->into_group = argv[++i];
    } else if (strcmp(o, "--rlimit-data") == 0) {
      NEED(1);
      spec->rlimit_data = number(argv[++i], o);
    } else if (strcmp(o, "--rlimit-nproc") == 0) {
      NEED(1);
      spec->rlimit_nproc = number(argv[++i], o);
    } else if (strcmp(o, "--unshare-net") == 0) {
      spec->unshare_net = 1;
    } else if (strcmp(o, "--egress-port") == 0) {
      NEED(1);
      spec->egress_port = number(argv[++i], o);
      if (spec->egress_port < 1 || spec->egress_port > 65535) fail("spec", "--egress-port needs a port from 1 to 65535");
    } else if (strcmp(o, "--report") == 0) {
      NEED(1);
      long long fd = number(argv[++i], o);
      /* Process 1 closes it before forking the plugin: standard input, output or error must never be the one closed. */
      if (fd < 3 || fd > INT_MAX) fail("spec", "--report needs a descriptor number of 3 or more");
      spec->report_fd = (int)fd;
    } else if (strcmp(o, "--user") == 0) {
      NEED(2);
      spec->switch_user = 1;
      long long uid = number(argv[i + 1], o), gid = number(argv[i + 2], o);
      /* (uid_t)-1 makes setresuid change nothing (the plugin would stay root), and a larger id would wrap to another user. */
      if (uid > 0xfffffffeLL || gid > 0xfffffffeLL) fail("spec", "--user ids must lie below 4294967295");
      spec->uid = (uid_t)uid;
      spec->gid = (gid_t)gid;
      if (spec->uid == 0 || spec->gid == 0) fail("spec", "--user must name a user other than root");
      i += 2;
    } else if (strcmp(o, "--seccomp") == 0) {
      NEED(1);
      spec->seccomp_fd = (int)number(argv[++i], o);
    } else if (strcmp(o, "--chdir") == 0) {
      NEED(1);
      spec->chdir_path = argv[++i];
    } else if (strcmp(o, "--shm") == 0) {
      NEED(1);
      spec->shm_bytes = number(argv[++i], o);
    } else if (strcmp(o, "--tmp") == 0) {
      NEED(1);
      spec->tmp_bytes = number(argv[++i], o);
      /* A tmpfs of size 0 has no size limit at all. */
      if (spec->tmp_bytes == 0) fail("spec", "--tmp needs a size above 0");
    } else if (strcmp(o, "--parent") == 0) {
      NEED(1);
      spec->parent = (pid_t)number(argv[++i], o);
    } else if (strcmp(o, "--pass-fds") == 0) {
      NEED(1);
      spec->pass_fds = (int)number(argv[++i], o);
    } else if (strcmp(o, "--cover") == 0 || strcmp(o, "--dir") == 0 || strcmp(o, "--mask-dir") == 0 || strcmp(o, "--mask-file") == 0 ||
               strcmp(o, "--seal") == 0) {
      NEED(1);
      enum op_kind kind = o[2] == 'c' ? OP_COVER : o[2] == 'd' ? OP_DIR : o[2] == 's' ? OP_SEAL : o[7] == 'd' ? OP_MASK_DIR : OP_MASK_FILE;
      add_op(spec, kind)->path = argv[++i];
    } else if (strcmp(o, "--symlink") == 0) {
      NEED(2);
      struct op *op = add_op(spec, OP_SYMLINK);
      op->target = argv[i + 1];
      op->path = argv[i + 2];
      i += 2;
    } else if (strcmp(o, "--bind") == 0) {
      NEED(2);
      struct op *op = add_op(spec, OP_BIND);
      op->path = argv[i + 1];
      op->writable = access_mode(argv[i + 2]);
      i += 2;
    } else if (strcmp(o, "--bind-fd") == 0) {
      NEED(3);
      struct op *op = add_op(spec, OP_BIND_FD);
      op->fd = (int)number(argv[i + 1], o);
      op->path = argv[i + 2];
      op->writable = access_mode(argv[i + 3]);
      i += 3;
    } else if (strcmp(o, "--file") == 0) {
      NEED(2);
      struct op *op = add_op(spec, OP_FILE);
      op->fd = (int)number(argv[i + 1], o);
      op->path = argv[i + 2];
      i += 2;
    } else if (strcmp(o, "--allow") == 0) {
      NEED(2);
      struct op *op = add_op(spec, OP_ALLOW);
      op->path = argv[i + 1];
      op->rights = argv[i + 2];
      i += 2;
    } else if (strcmp(o, "--allow-fd") == 0) {
      NEED(2);
      struct op *op = add_op(spec, OP_ALLOW_FD);
      op->fd = (int)number(argv[i + 1], o);
      op->rights = argv[i + 2];
      i += 2;
    } else {
      fail("spec", "unknown option '%s'", o);
    }
#undef NEED
  }
  if (i >= argc - 1) fail("spec", "no program after --");
  if (spec->seccomp_fd < 0) fail("spec", "--seccomp is required");
  /* A proxy port with the host's network would open nothing: the plugin would reach everything the host reaches. */
  if (spec->egress_port >= 0 && !spec->unshare_net) fail("spec", "--egress-port needs --unshare-net");
  for (int k = 0; k < spec->op_count; k++)
    if (spec->ops[k].path != NULL) require_absolute(spec->ops[k].path);
  if (spec->into_group != NULL) require_absolute(spec->into_group);
  spec->argv = &argv[i + 1];
}

static int open_no_symlinks(const char *path, int flags) {
  struct launcher_open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC), .mode = 0, .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
  return (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof how);
}

static int clone_tree(int dirfd, const char *path, int flags) {
  return (int)syscall(SYS_open_tree, dirfd, path, OPEN_TREE_CLONE | O_CLOEXEC | AT_RECURSIVE | flags);
}

static void set_mount_attr(int tree, uint64_t set, const char *step, const char *what) {
  struct launcher_mount_attr attr = {.attr_set = set};
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &attr, sizeof attr) != 0) fail_errno(step, what);
}

/* Attaches a detached tree at path, resolved without following any link a plugin or another process could have planted. */
static void attach(int tree, const char *path, const char *step) {
  int target = open_no_symlinks(path, O_PATH);
  if (target < 0) fail_errno(step, path);
  if (syscall(SYS_move_mount, tree, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) != 0) fail_errno(step, path);
  close(target);
  close(tree);
}

static int detached_tmpfs(const char *mode, long long size, uint64_t attrs, const char *step) {
  int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
  if (fs < 0) fail_errno(step, "fsopen tmpfs");
  char size_text[32];
  snprintf(size_text, sizeof size_text, "%lld", size);
  if (syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "mode", mode, 0) != 0) fail_errno(step, "tmpfs mode");
  if (size >= 0 && syscall(SYS_fsconfig, fs, FSCONFIG_SET_STRING, "size", size_text, 0) != 0) fail_errno(step, "tmpfs size");
  if (syscall(SYS_fsconfig, fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) != 0) fail_errno(step, "tmpfs create");
  int tree = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC, attrs);
  if (tree < 0) fail_errno(step, "fsmount tmpfs");
  close(fs);
  return tree;
}

/* A read-only copy of a descriptor's bytes at path: the verified file, whatever now lies at the path on the host. */
static void mount_file_copy(int source, const char *path) {
  int tree = detached_tmpfs("0755", -1, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "file");
  int out = openat(tree, "file", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
  if (out < 0) fail_errno("file", "create copy");
  char buffer[65536];
  off_t offset = 0;
  for (;;) {
    ssize_t n = pread(source, buffer, sizeof buffer, offset);
    if (n < 0) fail_errno("file", "read source");
    if (n == 0) break;
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out, buffer + done, (size_t)(n - done));
      if (w < 0) fail_errno("file", "write copy");
      done += w;
    }
    offset += n;
  }
  if (fchmod(out, 0444) != 0) fail_errno("file", "chmod copy");
  close(out);
  int file = (int)syscall(SYS_open_tree, tree, "file", OPEN_TREE_CLONE | O_CLOEXEC);
  if (file < 0) fail_errno("file", "clone copy");
  set_mount_attr(file, MOUNT_ATTR_RDONLY, "file", "read-only copy");
  close(tree);
  attach(file, path, "file");
}

static void write_file(const char *path, const char *text, const char *step) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) fail_errno(step, path);
  size_t length = strlen(text);
  if (write(fd, text, length) != (ssize_t)length) fail_errno(step, path);
  close(fd);
}

/*
 * "0" moves the writer. Written to a v1 tasks file it moves the calling thread alone, which skips the RCU grace period
 * (about 10 ms) that moving a whole thread group waits for; the launcher has no other thread, so the process moves.
 */
static void join_groups(const struct spec *spec) {
  for (int i = 0; i < spec->group_count; i++) write_file(spec->groups[i], "0\n", "cgroup");
}

static void set_limit(int resource, long long value, const char *what) {
  if (value < 0) return;
  struct rlimit limit = {.rlim_cur = (rlim_t)value, .rlim_max = (rlim_t)value};
  if (setrlimit(resource, &limit) != 0) fail_errno("rlimit", what);
}

/*
 * Forks the sandbox's process 1, into a v2 group when one is given: a process born in its group moves nobody, so the
 * kernel does not wait for the RCU grace period (about 10 ms) that moving one takes. The raw clone3 skips the C
 * library's fork bookkeeping, which this single-threaded child never needs: it keeps the parent's cached thread id,
 * read only by raise and the pthread calls, none of which process 1 makes (its fork of the plugin sets its own).
 */
static pid_t fork_reaper(int group) {
  if (group < 0) return fork();
  struct launcher_clone_args args = {.flags = CLONE_INTO_CGROUP, .exit_signal = SIGCHLD, .cgroup = (uint64_t)group};
  return (pid_t)syscall(SYS_clone3, &args, sizeof args);
}

/* Runs as the sandbox's process 1: the plugin's reaper, which forwards the host's signals to it. */
static volatile pid_t forward_to = -1;

static void forward(int signal) {
  if (forward_to > 0) kill(forward_to, signal);
}

static const int FORWARDED[] = {SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2};

static void forward_signals(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = forward;
  sigemptyset(&action.sa_mask);
  for (size_t i = 0; i < sizeof FORWARDED / sizeof FORWARDED[0]; i++) sigaction(FORWARDED[i], &action, NULL);
}

static void default_signals(void) {
  struct sigaction action;
  memset(&action, 0, sizeof action);
  action.sa_handler = SIG_DFL;
  for (size_t i = 0; i < sizeof FORWARDED / sizeof FORWARDED[0]; i++) sigaction(FORWARDED[i], &action, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
}

/* Waits for child (reaping any orphan on the way) and exits as it did: its code, or 128 + the signal that killed it. */
static void exit_like(pid_t child) {
  for (;;) {
    int status;
    pid_t done = waitpid(-1, &status, 0);
    if (done < 0) {
      if (errno == EINTR) continue;
      fail_errno("wait", "plugin");
    }
    if (done != child) continue;
    if (WIFEXITED(status)) _exit(WEXITSTATUS(status));
    _exit(128 + WTERMSIG(status));
  }
}

/*
 * Out of the host's process group and off its controlling terminal, still in its session. Terminal signals go to
 * the foreground group only, and without a controlling terminal no process of the sandbox can open /dev/tty (to
 * inject input with TIOCSTI, say). A session of its own (setsid) would do both, but also put the plugin in a
 * scheduler autogroup of its own, which makes every round trip with the host slower (docs/performance.md).
 */
static void leave_host_terminal(void) {
  /* A session leader (started detached, or exec'd by one) already leads its own group. */
  int leader = getsid(0) == getpid();
  if (!leader && setpgid(0, 0) != 0) fail_errno("session", "setpgid");
  int tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  if (tty < 0) {
    if (errno == ENXIO || errno == ENOENT || errno == EACCES) return;
    fail_errno("session", "/dev/tty");
  }
  /*
   * TIOCNOTTY detaches this process, and so every process it forks, from the terminal. A leader detaches its whole
   * session, and the kernel then hangs up the foreground group, which may be its own: that hangup is ignored.
   */
  if (leader) signal(SIGHUP, SIG_IGN);
  if (ioctl(tty, TIOCNOTTY) != 0) fail_errno("session", "TIOCNOTTY");
  if (leader) signal(SIGHUP, SIG_DFL);
  close(tty);
  if (open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC) >= 0) fail("session", "the controlling terminal is still reachable");
}

static void die_with_host(pid_t host) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail_errno("pdeathsig", "prctl");
  /* The host may have died before the request took effect, even before this process started (then an orphan's parent never dies). */
  if (getppid() != host) fail("parent", "the host (pid %d) is gone", (int)host);
}

/*
 * Process 1 dies with the launcher. Its parent lies outside its PID namespace, so getppid() says 0 whether or not the
 * launcher lives; the launcher's end of a pipe, closed only by its death, tells instead.
 */
static void die_with_launcher(int launcher_alive) {
  if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) fail_errno("pdeathsig", "prctl");
  struct pollfd alive = {.fd = launcher_alive, .events = POLLIN};
  if (poll(&alive, 1, 0) != 0) _exit(1);
  close(launcher_alive);
}

/*
 * A missing mount point, made like what will be mounted on it (a directory, or a file such as a pinned interpreter).
 * Only a cover can lack one: the host's own trees are read-only by then, and the plugin's trees hold their real paths.
 */
static void make_mount_point(int tree, const char *path) {
  struct stat st;
  if (fstat(tree, &st) != 0) fail_errno("bind", path);
  if (S_ISDIR(st.st_mode)) {
    if (mkdir(path, 0755) == 0) {
      if (chmod(path, 0755) != 0) fail_errno("bind", path);
    } else if (errno != EEXIST) {
      fail_errno("bind", path);
    }
    return;
  }
  int point = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (point >= 0) close(point);
  else if (errno != EEXIST) fail_errno("bind", path);
}

/*
 * The tree a descriptor opened in the host's mount namespace shows, cloned in this one: the kernel clones only mounts of
 * the caller's namespace, so the descriptor's current path is opened again here, and must be the same directory.
 */
static int clone_descriptor(int fd, const char *target) {
  char link[64], path[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  ssize_t length = readlink(link, path, sizeof path - 1);
  if (length < 0) fail_errno("bind-fd", target);
  path[length] = '\0';
  struct stat verified, found;
  int source = path[0] == '/' ? open_no_symlinks(path, O_PATH) : -1;
  if (source < 0 || fstat(fd, &verified) != 0 || fstat(source, &found) != 0 || verified.st_dev != found.st_dev || verified.st_ino != found.st_ino)
    fail("bind-fd", "%s: the verified directory is no longer reachable at a path without links", target);
  int tree = clone_tree(source, "", AT_EMPTY_PATH);
  if (tree < 0) fail_errno("bind-fd", target);
  close(source);
  return tree;
}

/* Whether path's first component is name ("usr" for /usr/lib, or for usr/bin, a link's relative target). */
static int starts_with_top(const char *path, const char *name) {
  while (*path == '/') path++;
  size_t length = strcspn(path, "/");
  return length == strlen(name) && strncmp(path, name, length) == 0;
}

/* Whether /name is covered itself (not only something below it). */
static int covers_top(const struct spec *spec, const char *name) {
  for (int i = 0; i < spec->op_count; i++) {
    const char *path = spec->ops[i].path;
    if (spec->ops[i].kind != OP_COVER || !starts_with_top(path, name)) continue;
    path += strspn(path, "/") + strlen(name);
    if (strspn(path, "/") == strlen(path)) return 1;
  }
  return 0;
}

/* A top-level directory the sandbox shows as the host has it: one the spec reaches into (a system directory), neither covered nor /proc. */
static int shown_from_host(const struct spec *spec, const char *name) {
  if (strcmp(name, "proc") == 0 || covers_top(spec, name)) return 0;
  for (int i = 0; i < spec->op_count; i++)
    if (spec->ops[i].path != NULL && starts_with_top(spec->ops[i].path, name)) return 1;
  return 0;
}

/*
 * Moves the sandbox into a fresh root holding only the top-level directories the spec shows from the host (recursive
 * clones), the host's top-level links into them (merged /usr's /bin), an empty directory for each cover, and the fresh
 * /proc; the host's tree is then detached. Covering a host directory in place hid its files but not the mounts below it
 * (/proc/self/mountinfo listed every one), nor a file at / (stat needs no Landlock right) or a directory made at / after
 * the host listed it, whose sockets a plugin with network could connect to. The fresh /proc is mounted before the host's
 * is detached: in a user namespace the kernel mounts a proc only where a fully visible one is already mounted.
 */
static void enter_fresh_root(const struct spec *spec) {
  /* Staged on /proc, which every host has and the fresh root replaces. */
  attach(detached_tmpfs("0755", 1 << 20, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "root"), "/proc", "root");
  int root = open_no_symlinks("/proc", O_PATH | O_DIRECTORY);
  if (root < 0) fail_errno("root", "fresh root");
  DIR *host = opendir("/");
  if (host == NULL) fail_errno("root", "/");
  for (struct dirent *entry; (entry = readdir(host)) != NULL;) {
    const char *name = entry->d_name;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0) continue;
    char path[4096], target[4096];
    snprintf(path, sizeof path, "/%s", name);
    struct stat st;
    if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    if (S_ISDIR(st.st_mode) && shown_from_host(spec, name)) {
      if (mkdirat(root, name, 0755) != 0) fail_errno("root", path);
      int tree = clone_tree(AT_FDCWD, path, AT_SYMLINK_NOFOLLOW);
      if (tree < 0) fail_errno("root", path);
      if (syscall(SYS_move_mount, tree, "", root, name, MOVE_MOUNT_F_EMPTY_PATH) != 0) fail_errno("root", path);
      close(tree);
    } else if (S_ISLNK(st.st_mode)) {
      ssize_t length = readlink(path, target, sizeof target - 1);
      if (length < 0) continue;
      target[length] = '\0';
      const char *first = target + strspn(target, "/");
      char first_name[256];
      snprintf(first_name, sizeof first_name, "%.*s", (int)strcspn(first, "/"), first);
      if (shown_from_host(spec, first_name) && symlinkat(target, root, name) != 0) fail_errno("root", path);
    }
  }
  closedir(host);
  /* A cover of a directory the host lacks still gets its mount point, as the fresh /proc does. */
  for (int i = 0; i < spec->op_count; i++) {
    const char *path = spec->ops[i].path;
    if (spec->ops[i].kind != OP_COVER) continue;
    if (strcmp(path, "/") == 0) fail("cover", "the root directory cannot be covered");
    if (strchr(path + 1, '/') == NULL && mkdirat(root, path + 1, 0755) != 0 && errno != EEXIST) fail_errno("root", path);
  }
  /* The sandbox's own /dev/shm is always mounted, even where the spec shows no /dev. */
  if (!covers_top(spec, "dev") && !shown_from_host(spec, "dev") && (mkdirat(root, "dev", 0755) != 0 || mkdirat(root, "dev/shm", 0755) != 0))
    fail_errno("root", "/dev/shm");
  if (mkdirat(root, "proc", 0555) != 0) fail_errno("root", "/proc");
  set_mount_attr(root, MOUNT_ATTR_RDONLY, "root", "read-only");
  if (mount("proc", "/proc/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) != 0) fail_errno("proc", "/proc");
  if (fchdir(root) != 0) fail_errno("root", "chdir");
  if (syscall(SYS_pivot_root, ".", ".") != 0) fail_errno("root", "pivot_root");
  if (umount2(".", MNT_DETACH) != 0) fail_errno("root", "detach the host's tree");
  if (chdir("/") != 0) fail_errno("root", "chdir /");
  close(root);
}

/* Whether path is the cover --tmp makes the sandbox's own writable /tmp. */
static int own_tmp(const struct spec *spec, const char *path) { return spec->tmp_bytes > 0 && strcmp(path, "/tmp") == 0; }

/* --tmp names a cover of /tmp that stays writable: without that cover it would do nothing, and a seal would undo it. */
static void check_tmp(const struct spec *spec) {
  if (spec->tmp_bytes < 0) return;
  int covered = 0;
  for (int i = 0; i < spec->op_count; i++) {
    if (spec->ops[i].kind == OP_COVER && own_tmp(spec, spec->ops[i].path)) covered = 1;
    if (spec->ops[i].kind == OP_SEAL && own_tmp(spec, spec->ops[i].path)) fail("spec", "--tmp: /tmp is the sandbox's own writable /tmp and cannot be sealed");
  }
  if (!covered) fail("spec", "--tmp needs --cover /tmp");
}

static void apply_mounts(struct spec *spec) {
  if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) fail_errno("private", "/");
  /* Every source is cloned before the first cover could hide it. */
  for (int i = 0; i < spec->op_count; i++) {
    struct op *op = &spec->ops[i];
    if (op->kind == OP_BIND) {
      int source = open_no_symlinks(op->path, O_PATH);
      if (source < 0) fail_errno("bind", op->path);
      op->clone = clone_tree(source, "", AT_EMPTY_PATH);
      if (op->clone < 0) fail_errno("bind", op->path);
      close(source);
    } else if (op->kind == OP_BIND_FD) {
      op->clone = clone_descriptor(op->fd, op->path);
    } else {
      continue;
    }
    struct stat source;
    if (fstat(op->clone, &source) != 0) fail_errno("bind", op->path);
    /*
     * As bubblewrap binds every tree: a device node in one (its data directory, its install root) would open the host's
     * device whatever Landlock grants on the tree. Only a device the spec binds itself (/dev/null) keeps device access.
     */
    uint64_t device = S_ISCHR(source.st_mode) || S_ISBLK(source.st_mode) ? 0 : MOUNT_ATTR_NODEV;
    set_mount_attr(op->clone, MOUNT_ATTR_NOSUID | device | (op->writable ? 0 : MOUNT_ATTR_RDONLY), "bind", op->path);
  }
  /*
   * Everything the host shows, read-only: Landlock does not govern a file's metadata (mode, owner, times, extended
   * attributes), which a read-only mount refuses. Only what is mounted from here on (the plugin's own writable tree,
   * its /dev/shm) can be written; the clones above keep the access they were given. No device node in a system
   * directory opens either (bubblewrap binds them nodev too): only the devices the spec binds are devices.
   */
  struct launcher_mount_attr read_only = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
  if (syscall(SYS_mount_setattr, AT_FDCWD, "/", AT_RECURSIVE, &read_only, sizeof read_only) != 0) fail_errno("read-only", "/");
  enter_fresh_root(spec);
  for (int i = 0; i < spec->op_count; i++) {
    struct op *op = &spec->ops[i];
    switch (op->kind) {
      case OP_COVER:
        if (own_tmp(spec, op->path))
          attach(detached_tmpfs("1777", spec->tmp_bytes, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "tmp"), op->path, "tmp");
        else
          attach(detached_tmpfs("0755", 1 << 20, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "cover"), op->path, "cover");
        break;
      case OP_DIR:
        if (mkdir(op->path, 0755) != 0 && errno != EEXIST) fail_errno("dir", op->path);
        if (chmod(op->path, 0755) != 0) fail_errno("dir", op->path);
        break;
      case OP_SYMLINK:
        if (symlink(op->target, op->path) != 0) fail_errno("symlink", op->path);
        break;
      case OP_BIND:
      case OP_BIND_FD:
        make_mount_point(op->clone, op->path);
        attach(op->clone, op->path, op->kind == OP_BIND ? "bind" : "bind-fd");
        op->clone = -1;
        break;
      case OP_FILE:
        mount_file_copy(op->fd, op->path);
        break;
      case OP_MASK_DIR:
        attach(detached_tmpfs("0755", 4096, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "mask"), op->path, "mask");
        break;
      case OP_MASK_FILE: {
        int null = clone_tree(AT_FDCWD, "/dev/null", 0);
        if (null < 0) fail_errno("mask", "/dev/null");
        /* Without device access, the null device at the path cannot even be opened. */
        set_mount_attr(null, MOUNT_ATTR_RDONLY | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, "mask", op->path);
        attach(null, op->path, "mask");
        break;
      }
      case OP_SEAL: {
        int target = open_no_symlinks(op->path, O_PATH);
        if (target < 0) fail_errno("seal", op->path);
        struct launcher_mount_attr attr = {.attr_set = MOUNT_ATTR_RDONLY};
        if (syscall(SYS_mount_setattr, target, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) fail_errno("seal", op->path);
        close(target);
        break;
      }
      default:
        break;
    }
  }
  /* Always the sandbox's own: the host's /dev/shm is shared with every process of the machine. */
  attach(detached_tmpfs("1777", spec->shm_bytes, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, "shm"), "/dev/shm", "shm");
}

static uint64_t handled_fs_rights(int abi) {
  uint64_t rights = LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_READ_DIR | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_CHAR |
                    LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO | LL_FS_MAKE_BLOCK | LL_FS_MAKE_SYM;
  if (abi >= 2) rights |= LL_FS_REFER;
  if (abi >= 3) rights |= LL_FS_TRUNCATE;
  if (abi >= 5) rights |= LL_FS_IOCTL_DEV;
  return rights;
}

static uint64_t rights_of(const char *letters, int *optional) {
  uint64_t rights = 0;
  *optional = 0;
  for (const char *c = letters; *c; c++) {
    switch (*c) {
      case 'r':
        rights |= LL_FS_READ_FILE | LL_FS_READ_DIR;
        break;
      case 'x':
        rights |= LL_FS_EXECUTE;
        break;
      case 'w':
        rights |= LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SOCK | LL_FS_MAKE_FIFO |
                  LL_FS_MAKE_SYM | LL_FS_REFER | LL_FS_TRUNCATE;
        break;
      case 'd':
        rights |= LL_FS_IOCTL_DEV;
        break;
      case '?':
        *optional = 1;
        break;
      default:
        fail("spec", "unknown access letter '%c' in '%s'", *c, letters);
    }
  }
  return rights;
}

static void add_rule(int ruleset, int fd, uint64_t rights, uint64_t handled, const char *what) {
  struct stat st;
  if (fstat(fd, &st) != 0) fail_errno("landlock", what);
  uint64_t allowed = rights & handled;
  if (!S_ISDIR(st.st_mode)) allowed &= LL_FS_FILE_RIGHTS;
  if (allowed == 0) return;
  struct ll_path_beneath_attr rule = {.allowed_access = allowed, .parent_fd = fd};
  if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_PATH_BENEATH, &rule, 0) != 0) fail_errno("landlock", what);
}

/* One ruleset for everything the plugin may reach: what no rule grants, it cannot read, write or execute. */
static int build_ruleset(const struct spec *spec) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 1) fail("landlock", "Landlock is not enabled in this kernel (%s)", strerror(errno));
  struct ll_ruleset_attr attr = {.handled_access_fs = handled_fs_rights((int)abi)};
  if (abi >= 4 && spec->unshare_net) attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
  /*
   * Abstract Unix sockets too with network: they have no file a mount could hide, so a plugin sharing the host's network
   * namespace reached every one of the host's (a desktop's X11 display, a container runtime's shim). Its own processes'
   * sockets stay reachable: the scope refuses only those made outside the plugin's Landlock domain.
   */
  if (abi >= 6) attr.scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET;
  size_t size = abi >= 6 ? sizeof attr : abi >= 4 ? 2 * sizeof(uint64_t) : sizeof(uint64_t);
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
  if (ruleset < 0) fail_errno("landlock", "create ruleset");
  /* No TCP bind at all, and a connect only to the proxy's port: in a namespace whose only interface is loopback. */
  if (attr.handled_access_net != 0 && spec->egress_port >= 0) {
    struct ll_net_port_attr rule = {.allowed_access = LL_NET_CONNECT_TCP, .port = (uint64_t)spec->egress_port};
    if (syscall(SYS_landlock_add_rule, ruleset, LL_RULE_NET_PORT, &rule, 0) != 0) fail_errno("landlock", "proxy port");
  }
  for (int i = 0; i < spec->op_count; i++) {
    const struct op *op = &spec->ops[i];
    int optional;
    if (op->kind == OP_ALLOW) {
      uint64_t rights = rights_of(op->rights, &optional);
      int fd = open_no_symlinks(op->path, O_PATH);
      if (fd < 0) {
        if (optional && errno == ENOENT) continue;
        fail_errno("landlock", op->path);
      }
      add_rule(ruleset, fd, rights, attr.handled_access_fs, op->path);
      close(fd);
    } else if (op->kind == OP_ALLOW_FD) {
      add_rule(ruleset, op->fd, rights_of(op->rights, &optional), attr.handled_access_fs, "descriptor");
    }
  }
  return ruleset;
}

static struct sock_fprog read_seccomp(int fd) {
  size_t capacity = 4096, length = 0;
  unsigned char *bytes = malloc(capacity);
  if (bytes == NULL) fail("seccomp", "out of memory");
  for (;;) {
    if (length == capacity) {
      capacity *= 2;
      bytes = realloc(bytes, capacity);
      if (bytes == NULL) fail("seccomp", "out of memory");
    }
    ssize_t n = read(fd, bytes + length, capacity - length);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail_errno("seccomp", "read program");
    }
    if (n == 0) break;
    length += (size_t)n;
  }
  /* An empty program is the host withholding it (a failed check, or the host gone): the plugin must not run. */
  if (length == 0 || length % sizeof(struct sock_filter) != 0 || length / sizeof(struct sock_filter) > 0xffff)
    fail("seccomp", "no valid program on the descriptor (%zu bytes)", length);
  struct sock_fprog program = {.len = (unsigned short)(length / sizeof(struct sock_filter)), .filter = (struct sock_filter *)bytes};
  return program;
}

static void drop_capabilities(void) {
  for (int cap = 0; cap <= 63; cap++) {
    if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0) {
      if (errno == EINVAL) break;
      fail_errno("user", "drop bounding set");
    }
  }
}

static void clear_capability_sets(void) {
  struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (syscall(SYS_capset, &header, data) != 0) fail_errno("user", "clear capabilities");
}

/*
 * Process 1, once the plugin is forked, only reaps and forwards the host's signals: it keeps CAP_KILL alone, and only
 * for a plugin switched to its own user (a signal to another user needs it). Left as it was, on a root host it held
 * every capability of the host's user namespace inside the sandbox's namespaces, where bubblewrap's process 1 holds none.
 */
static void keep_only_kill(const struct spec *spec) {
  drop_capabilities();
  struct __user_cap_header_struct header = {.version = _LINUX_CAPABILITY_VERSION_3, .pid = 0};
  struct __user_cap_data_struct data[2];
  memset(data, 0, sizeof data);
  if (spec->switch_user) data[0].permitted = data[0].effective = 1U << CAP_KILL;
  if (syscall(SYS_capset, &header, data) != 0) fail_errno("reaper", "drop capabilities");
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail_errno("reaper", "no_new_privs");
}

/*
 * The plugin reads /proc/1/cmdline, the launcher's whole command line: the host's pid, its control groups (the host's
 * own among them) and where the launcher is installed (a home directory). Process 1 needs none of it once the plugin
 * is forked, which keeps its own copy; its argument bytes become the launcher's name alone.
 */
static void hide_command_line(int argc, char **argv) {
  char *start = argv[0];
  char *end = argv[argc - 1] + strlen(argv[argc - 1]);
  memset(start, 0, (size_t)(end - start));
  snprintf(start, (size_t)(end - start) + 1, "mcp-plugin-launcher");
}

static void become_plugin_user(const struct spec *spec) {
  if (spec->switch_user) {
    if (setgroups(0, NULL) != 0) fail_errno("user", "setgroups");
    if (setresgid(spec->gid, spec->gid, spec->gid) != 0) fail_errno("user", "setresgid");
    if (setresuid(spec->uid, spec->uid, spec->uid) != 0) fail_errno("user", "setresuid");
  }
  clear_capability_sets();
}

/*
 * Blocks until process 1 has closed its end of the pipe, which it does only once it has dropped its capabilities and
 * hidden its command line. Forked first, the plugin won the race for the processor in about one spawn in twenty and read
 * process 1's whole command line (the host's pid, its groups) and a status with every capability of root still held.
 */
static void await_reaper_ready(int ready_read) {
  char byte;
  while (read(ready_read, &byte, 1) < 0 && errno == EINTR) {
  }
  close(ready_read);
}

/* The plugin's own process: Landlock, no stray descriptors, its user, the seccomp program, then the plugin. */
static void run_plugin(const struct spec *spec, int ready_read, int ready_write) {
  /* Signals first: a host's SIGTERM forwarded while it waits for process 1 ends it, as it would end the plugin. */
  default_signals();
  close(ready_write);
  int ruleset = build_ruleset(spec);
  if (spec->chdir_path != NULL) {
    if (chdir(spec->chdir_path) != 0) fail_errno("chdir", spec->chdir_path);
    /* As bubblewrap does, and a shell would: the plugin's PWD names where it runs, whatever the host passed. */
    if (setenv("PWD", spec->chdir_path, 1) != 0) fail_errno("chdir", "PWD");
  }
  drop_capabilities();
  become_plugin_user(spec);
  struct sock_fprog program = read_seccomp(spec->seccomp_fd);
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail_errno("no_new_privs", "prctl");
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) fail_errno("landlock", "restrict self");
  close(ruleset);
  /* Last of the set-up, which overlaps process 1's own drop: the plugin seldom waits at all. */
  await_reaper_ready(ready_read);
  /*
   * The plugin keeps the descriptors the host hands it (3 up to 3 + --pass-fds) but those the launcher used up; whatever
   * else the host let the launcher inherit, close-on-exec or not, ends here.
   */
  for (int i = 0; i < spec->op_count; i++)
    if (spec->ops[i].fd >= 0) close(spec->ops[i].fd);
  if (syscall(SYS_close_range, 3U + (unsigned)spec->pass_fds, ~0U, 0) != 0) fail_errno("descriptors", "close_range");
  if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &program, 0, 0) != 0) fail_errno("seccomp", "load program");
  execvp(spec->argv[0], spec->argv);
  fail_errno("exec", spec->argv[0]);
}

/* The proxy address lies on the namespace's loopback, which a new network namespace holds down. */
static void bring_loopback_up(void) {
  int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (sock < 0) fail_errno("loopback", "socket");
  struct ifreq request;
  memset(&request, 0, sizeof request);
  snprintf(request.ifr_name, sizeof request.ifr_name, "lo");
  if (ioctl(sock, SIOCGIFFLAGS, &request) != 0) fail_errno("loopback", "read flags");
  request.ifr_flags |= IFF_UP | IFF_RUNNING;
  if (ioctl(sock, SIOCSIFFLAGS, &request) != 0) fail_errno("loopback", "bring up");
  close(sock);
}

/* Written once process 1 exists, while the plugin waits for its seccomp program: the host opens its listener meanwhile. */
static void report_sandbox(int report_fd, pid_t reaper) {
  char text[64];
  int length = snprintf(text, sizeof text, "{\"child-pid\": %d}\n", (int)reaper);
  if (write(report_fd, text, (size_t)length) != length) fail_errno("report", "write");
  close(report_fd);
}

static void map_own_user(uid_t uid, gid_t gid) {
  char map[64];
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)uid, (unsigned)uid);
  write_file("/proc/self/uid_map", map, "userns");
  write_file("/proc/self/setgroups", "deny\n", "userns");
  snprintf(map, sizeof map, "%u %u 1\n", (unsigned)gid, (unsigned)gid);
  write_file("/proc/self/gid_map", map, "userns");
}

/*
 * The scope-only mode, for a plugin bubblewrap confines (src/sandbox/backends.ts): bubblewrap has no Landlock, and its
 * plugin with network connected to every abstract Unix socket of the host (an X11 display, a D-Bus bus, a container
 * runtime's shim), which no mount hides, and signalled its sandbox's process 1. Run inside bubblewrap's sandbox (after
 * its seccomp program and no_new_privs), right before the plugin: a ruleset that handles no file or network access,
 * only the scopes, so the plugin and its descendants reach only abstract sockets and processes of their own domain.
 * The host asks for it only where --landlock-abi reported 6 or more: here an unenforceable scope fails rather than run
 * the plugin open.
 */
static void run_scoped(int argc, char **argv) {
  int at = 2;
  long long pass_fds = -1;
  if (at + 1 < argc && strcmp(argv[at], "--pass-fds") == 0) {
    pass_fds = number(argv[at + 1], "--pass-fds");
    if (pass_fds > INT_MAX - 3) fail("spec", "--pass-fds is out of range");
    at += 2;
  }
  if (at + 1 >= argc || strcmp(argv[at], "--") != 0) fail("spec", "--scope needs -- and a program");
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  if (abi < 6) fail("landlock", "the kernel's Landlock (ABI %ld) cannot scope abstract Unix sockets and signals (ABI 6)", abi < 0 ? 0 : abi);
  struct ll_ruleset_attr attr = {.scoped = LL_SCOPE_SIGNAL | LL_SCOPE_ABSTRACT_UNIX_SOCKET};
  int ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (ruleset < 0) fail_errno("landlock", "create scope ruleset");
  /* bubblewrap set it already; restricting oneself needs it (or CAP_SYS_ADMIN), and setting it twice is harmless. */
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) fail_errno("no_new_privs", "prctl");
  if (syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) fail_errno("landlock", "restrict self");
  close(ruleset);
  /*
   * bubblewrap hands the plugin every descriptor it inherited: one that whatever started the host left without
   * close-on-exec reached the plugin (a log file, a socket, a directory of the host's). The plugin keeps 3 up to
   * 3 + --pass-fds - 1, those the host handed it (bubblewrap has closed the ones it mounted); the rest ends here.
   */
  if (pass_fds >= 0 && syscall(SYS_close_range, 3U + (unsigned)pass_fds, ~0U, 0) != 0) fail_errno("descriptors", "close_range");
  execvp(argv[at + 1], argv + at + 1);
  fail_errno("exec", argv[at + 1]);
}

/* The running kernel's Landlock ABI on standard output (0: none), for the host to report what it enforces. */
static void print_abi(void) {
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
  printf("%ld\n", abi < 0 ? 0L : abi);
  exit(0);
}

int main(int argc, char **argv) {
  struct spec spec;
  /* Modes of their own, before anything of the full launcher (its terminal, groups and namespaces) happens. */
  if (argc >= 2 && strcmp(argv[1], "--scope") == 0) run_scoped(argc, argv);
  if (argc == 2 && strcmp(argv[1], "--landlock-abi") == 0) print_abi();
  parse(argc, argv, &spec);
  check_tmp(&spec);
  leave_host_terminal();
  die_with_host(spec.parent > 0 ? spec.parent : getppid());
  join_groups(&spec);
  int into_group = -1;
  if (spec.into_group != NULL && (into_group = open_no_symlinks(spec.into_group, O_PATH | O_DIRECTORY)) < 0) fail_errno("cgroup", spec.into_group);
  set_limit(RLIMIT_DATA, spec.rlimit_data, "data");
  set_limit(RLIMIT_NPROC, spec.rlimit_nproc, "nproc");
  /* A core file holds the plugin's memory (its credentials, other callers' data) and lands wherever the host's
   * core_pattern says; hard 0 too, so the plugin cannot raise it back. */
  set_limit(RLIMIT_CORE, 0, "core");
  uid_t uid = getuid();
  gid_t gid = getgid();
  /* Run by root, no user namespace: a user other than root could not exist inside one that maps root alone. */
  int flags = CLONE_NEWPID | CLONE_NEWNS | CLONE_NEWIPC | CLONE_NEWUTS | (spec.unshare_net ? CLONE_NEWNET : 0) | (uid == 0 ? 0 : CLONE_NEWUSER);
  if (unshare(flags) != 0) fail_errno("unshare", "namespaces");
  if (uid != 0) map_own_user(uid, gid);
  if (spec.egress_port >= 0) bring_loopback_up();
  /* Only now: a process that is not dumpable cannot write its own user namespace's maps. */
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  int alive[2];
  if (pipe2(alive, O_CLOEXEC) != 0) fail_errno("fork", "pipe");
  forward_signals();
  pid_t reaper = fork_reaper(into_group);
  if (reaper < 0) fail_errno(into_group < 0 ? "fork" : "cgroup", "process 1");
  if (reaper > 0) {
    forward_to = reaper;
    if (spec.report_fd >= 0) report_sandbox(spec.report_fd, reaper);
    /* Nothing but the pipe that process 1 watches: the plugin's descriptors are process 1's to pass on. */
    if (alive[1] > 3) syscall(SYS_close_range, 3U, (unsigned)alive[1] - 1, 0);
    syscall(SYS_close_range, (unsigned)alive[1] + 1, ~0U, 0);
    exit_like(reaper);
  }
  close(alive[1]);
  if (into_group >= 0) close(into_group);
  /* The host reads the report to its end: no process of the sandbox may hold it open. */
  if (spec.report_fd >= 0) close(spec.report_fd);
  die_with_launcher(alive[0]);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
  /*
   * Rooted at the groups process 1 was born or joined into: /proc/self/cgroup would otherwise name the host's own groups
   * and the plugin's (the host's pid). EINVAL is a kernel without control groups, which has no such file to read.
   */
  if (unshare(CLONE_NEWCGROUP) != 0 && errno != EINVAL) fail_errno("unshare", "cgroup namespace");
  apply_mounts(&spec);
  int ready[2];
  if (pipe2(ready, O_CLOEXEC) != 0) fail_errno("fork", "pipe");
  pid_t plugin = fork();
  if (plugin < 0) fail_errno("fork", "plugin");
  if (plugin == 0) run_plugin(&spec, ready[0], ready[1]);
  forward_to = plugin;
  keep_only_kill(&spec);
  hide_command_line(argc, argv);
  /* Closes the ready pipe with the rest: the plugin goes on. */
  syscall(SYS_close_range, 3U, ~0U, 0);
  exit_like(plugin);
  return 1;
}
