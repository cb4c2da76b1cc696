/* The floor of any relay process: the echo server (the command line given) started as a child,
   and the bytes passed between the two pairs of pipes by two OS threads doing blocking reads and
   writes, nothing looked at, nothing rewritten.  bench_proxy's "stdio C copy relay" (it builds
   this file with the C compiler it finds, when there is one).

   cc -O2 -pthread -o relay_copy relay_copy.c && ./relay_copy python -m mcp_trio._cli serve ... */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

struct pump {
  int source, sink;
};

static void *pump(void *arg) {
  struct pump *p = arg;
  char buffer[65536];
  for (;;) {
    ssize_t got = read(p->source, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    for (ssize_t sent = 0; sent < got;) {
      ssize_t wrote = write(p->sink, buffer + sent, (size_t)(got - sent));
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote <= 0) exit(1);
      sent += wrote;
    }
  }
  close(p->sink);
  return NULL;
}

int main(int argc, char **argv) {
  int up[2], down[2];
  if (argc < 2 || pipe(up) || pipe(down)) {
    fprintf(stderr, "usage: relay_copy COMMAND [ARG...]\n");
    return 2;
  }
  pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    dup2(up[0], 0);
    dup2(down[1], 1);
    close(up[0]), close(up[1]), close(down[0]), close(down[1]);
    execvp(argv[1], argv + 1);
    _exit(127);
  }
  close(up[0]), close(down[1]);
  struct pump upward = {0, up[1]}, downward = {down[0], 1};
  pthread_t thread;
  if (pthread_create(&thread, NULL, pump, &upward)) return 1;
  pump(&downward);
  waitpid(child, NULL, 0);
  return 0;
}
