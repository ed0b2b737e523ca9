// CCanopyLinux -- Linux system headers that Glibc's Swift overlay does not export.
#ifndef CCANOPY_LINUX_SHIM_H
#define CCANOPY_LINUX_SHIM_H
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/resource.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <signal.h>
#include <fcntl.h>
#include <unistd.h>
#include <errno.h>
#include <sys/syscall.h>

static inline int ccanopy_errno(void) { return errno; }
// accept4 is only declared under _GNU_SOURCE, which the Swift Glibc module does not define.
static inline int ccanopy_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return (int)syscall(SYS_accept4, fd, addr, len, flags);
}
#endif
