/*
 * The pod sandbox's pause process for the local pause image (hack/build-images.sh builds it with
 * gcc -static into localhost/clusterlet-test/pause:3.10), like Kubernetes' build/pause/linux/pause.c: it holds
 * the pod's namespaces, sleeps in pause() forever, reaps the zombies it inherits as the pod's pid 1
 * (SIGCHLD) and exits 0 on SIGINT/SIGTERM.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define VERSION "3.10"

static void sigdown(int signo) {
  static const char msg[] = "Shutting down, got signal\n";
  (void)signo;
  (void)!write(STDERR_FILENO, msg, sizeof msg - 1);
  _exit(0);
}

static void sigreap(int signo) {
  (void)signo;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

int main(int argc, char **argv) {
  for (int i = 1; i < argc; ++i) {
    if (!strcasecmp(argv[i], "-v")) {
      printf("pause.c %s\n", VERSION);
      return 0;
    }
  }
  if (getpid() != 1) fprintf(stderr, "Warning: pause should be the first process\n");

  struct sigaction down = {.sa_handler = sigdown};
  struct sigaction reap = {.sa_handler = sigreap, .sa_flags = SA_NOCLDSTOP | SA_RESTART};
  if (sigaction(SIGINT, &down, NULL) < 0) return 1;
  if (sigaction(SIGTERM, &down, NULL) < 0) return 2;
  if (sigaction(SIGCHLD, &reap, NULL) < 0) return 3;

  for (;;) pause();
  fprintf(stderr, "Error: infinite loop terminated\n");
  return 42;
}
