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
#include <pthread.h>
#include <string.h>

static inline int ccanopy_errno(void) { return errno; }
// accept4 is only declared under _GNU_SOURCE, which the Swift Glibc module does not define.
static inline int ccanopy_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return (int)syscall(SYS_accept4, fd, addr, len, flags);
}

// Signal forwarding for EventLoop.onSignals. The loop thread blocks its signals and reads them from a
// signalfd; a thread that started before the mask was set would otherwise take the default action
// (terminate). This handler, installed for those signals, re-directs them at the loop thread with
// pthread_kill (async-signal-safe), where they stay pending for the signalfd. The target is written
// before the handler is installed; keep every call in one Swift file so they share this static copy.
static inline pthread_t *ccanopy_signal_target(void) {
    static pthread_t target;
    return &target;
}
static inline void ccanopy_forward_signal(int signo) { pthread_kill(*ccanopy_signal_target(), signo); }
static inline int ccanopy_forward_signal_to_thread(int signo, pthread_t target) {
    *ccanopy_signal_target() = target;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = ccanopy_forward_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    return sigaction(signo, &action, NULL);
}
#endif
