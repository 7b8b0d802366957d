/*
 * The second stdio hop at its cheapest: the same relay as pipeRelay.ts with
 * no runtime of its own (no event loop, no buffers but one, no JavaScript),
 * so that what it costs is the hop itself: two more pipe writes and two more
 * process wake-ups per call. Built by the gatewayStdio bench with `cc -O2`.
 *
 *   pipeRelay <program> [args...]
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

/* Copies what one read gives from `from` to `to`; ends the relay when either side is gone. */
static void copyOnce(int from, int to) {
  static char buffer[65536];
  ssize_t got = read(from, buffer, sizeof buffer);
  if (got < 0 && errno == EINTR) return;
  if (got <= 0) exit(0);
  for (ssize_t sent = 0; sent < got;) {
    ssize_t wrote = write(to, buffer + sent, (size_t)(got - sent));
    if (wrote < 0 && errno == EINTR) continue;
    if (wrote <= 0) exit(0);
    sent += wrote;
  }
}

int main(int argc, char **argv) {
  if (argc < 2) return 2;
  int toChild[2], fromChild[2];
  if (pipe(toChild) != 0 || pipe(fromChild) != 0) return 1;
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    dup2(toChild[0], 0);
    dup2(fromChild[1], 1);
    close(toChild[0]);
    close(toChild[1]);
    close(fromChild[0]);
    close(fromChild[1]);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  close(toChild[0]);
  close(fromChild[1]);
  struct pollfd watched[2] = {{0, POLLIN, 0}, {fromChild[0], POLLIN, 0}};
  for (;;) {
    if (poll(watched, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return 1;
    }
    if (watched[0].revents != 0) copyOnce(0, toChild[1]);
    if (watched[1].revents != 0) copyOnce(fromChild[0], 1);
  }
}
