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
#include <malloc.h>

static inline int ccanopy_errno(void) { return errno; }
// accept4 is only declared under _GNU_SOURCE, which the Swift Glibc module does not define.
static inline int ccanopy_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags) {
    return (int)syscall(SYS_accept4, fd, addr, len, flags);
}

// Signal forwarding for EventLoop.onSignals. The loop thread blocks its signals and reads them from a
// signalfd; a thread that started before the mask was set would otherwise take the default action
// (terminate). This handler, installed for those signals, re-directs them at the loop thread with
// pthread_kill (async-signal-safe), where they stay pending for the signalfd. Each signal has its own
// target, written before the handler is installed: two loops watching different signals (a daemon's
// SIGTERM, a test's SIGUSR2) must not redirect each other's. A handler running on the target thread itself
// (which would mean the signal is not blocked there) drops the signal instead of re-raising it forever.
// Keep every call in one Swift file so they share this static copy.
static inline pthread_t *ccanopy_signal_targets(void) {
    static pthread_t targets[_NSIG];
    return targets;
}
static inline void ccanopy_forward_signal(int signo) {
    if (signo <= 0 || signo >= _NSIG) return;
    pthread_t target = ccanopy_signal_targets()[signo];
    if (pthread_equal(target, pthread_self())) return;
    pthread_kill(target, signo);
}
static inline int ccanopy_forward_signal_to_thread(int signo, pthread_t target) {
    if (signo <= 0 || signo >= _NSIG) return -1;
    ccanopy_signal_targets()[signo] = target;
    struct sigaction action;
    memset(&action, 0, sizeof action);
    action.sa_handler = ccanopy_forward_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    return sigaction(signo, &action, NULL);
}
#endif
