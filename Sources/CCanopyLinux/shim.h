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

static inline int ccanopy_errno(void) { return errno; }
#endif
