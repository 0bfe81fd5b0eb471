/* Sockets and pipes where Linux and macOS differ (the rest: tokenloop/platform.h). The Linux calls
 * are kept there; the fallbacks are compiled for macOS by scripts/check-macos.sh. */
#ifndef TOKENLOOP_PLATFORM_NET_H
#define TOKENLOOP_PLATFORM_NET_H

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

/* Sockets and pipes closed across exec. Where the flag cannot be given when the descriptor is
 * made (macOS), it is set just after: tokenloop runs no child in between. There a socket also
 * gets SO_NOSIGPIPE, as MSG_NOSIGNAL does for each send on Linux: a client gone mid-answer is an
 * error from send, not a signal that ends the program. */
static inline int tl_cloexec(int fd)
{
#ifdef SO_NOSIGPIPE
    int one = 1;
    if (fd >= 0) (void)setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &one, sizeof one);   /* ENOTSOCK for a pipe */
#endif
    if (fd >= 0 && fcntl(fd, F_SETFD, FD_CLOEXEC) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}
static inline int tl_socket_cloexec(int domain, int type, int protocol)
{
#ifdef SOCK_CLOEXEC
    return socket(domain, type | SOCK_CLOEXEC, protocol);
#else
    return tl_cloexec(socket(domain, type, protocol));
#endif
}
static inline int tl_accept_cloexec(int fd, struct sockaddr *addr, socklen_t *len)
{
#if defined(__linux__) && defined(_GNU_SOURCE)   /* accept4 is declared for _GNU_SOURCE only */
    return accept4(fd, addr, len, SOCK_CLOEXEC);
#else
    return tl_cloexec(accept(fd, addr, len));
#endif
}
static inline int tl_pipe_cloexec(int fds[2])
{
#if defined(__linux__) && defined(_GNU_SOURCE)
    return pipe2(fds, O_CLOEXEC);
#else
    if (pipe(fds)) return -1;
    if (tl_cloexec(fds[0]) < 0) return close(fds[1]), -1;
    if (tl_cloexec(fds[1]) < 0) return close(fds[0]), -1;
    return 0;
#endif
}

/* poll's "the peer shut its side" event; macOS has none (0 asks for nothing), and there a read
 * of 0 bytes, which callers also check, says it. */
#ifdef POLLRDHUP
#define TL_POLLRDHUP POLLRDHUP
#else
#define TL_POLLRDHUP 0
#endif

#endif
