/* sockprobe PATH: connects to the UNIX socket PATH, sends "ping\n" and
 * prints "connected: REPLY", or "error: WHY" and exits 1. Built static by
 * the Kata suites into their probe image (busybox's nc has no UNIX
 * sockets). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int main(int argc, char **argv) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  char reply[64] = {0};
  int fd;
  ssize_t n;

  if (argc != 2 || strlen(argv[1]) >= sizeof addr.sun_path) {
    fprintf(stderr, "usage: sockprobe PATH\n");
    return 2;
  }
  strcpy(addr.sun_path, argv[1]);
  fd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
    printf("error: %s\n", strerror(errno));
    return 1;
  }
  if (write(fd, "ping\n", 5) != 5 || (n = read(fd, reply, sizeof reply - 1)) <= 0) {
    printf("error: no reply: %s\n", strerror(errno));
    return 1;
  }
  reply[strcspn(reply, "\n")] = 0;
  printf("connected: %s\n", reply);
  return 0;
}
