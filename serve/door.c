/* The front door: serve's own listening socket. Each new connection's first request head is read
 * ahead (MSG_PEEK, so libmicrohttpd still reads every byte) and checked for what libmicrohttpd
 * 0.9.75 would refuse itself, in HTML (or, for a Content-Length that is not a number, with its
 * status line and headers sent twice): an HTTP version other than 1.0 and 1.1 (505), a request
 * line or headers past what it holds (414, 431), a Content-Length that is not a number of bytes
 * (400). Those get OpenAI's error object from here, and the connection closes; every other
 * connection is handed to libmicrohttpd (MHD_add_connection). A kept-alive connection's later
 * requests are not read ahead: theirs are libmicrohttpd's answers still. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "tokenloop/platform_net.h"

/* A head this long is refused: libmicrohttpd's own limit (its 32 KiB connection memory) is
 * higher, so it never meets a head it would refuse itself. */
enum { HEAD_MAX = 16 << 10, MAX_CHECKING = 256, PEEK_WAIT_MS = 10 };

struct door {
    int fd;
    int wake[2];                /* a byte here ends the accept loop */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t none_left;
    int checking;               /* connections being read ahead (each on its own thread) */
    _Atomic int stop;
};

typedef struct arrival {
    server *srv;
    int fd;
    struct sockaddr_storage addr;
    socklen_t len;
} arrival;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* The value of header name in head (its lines after the request line); NULL: absent. Sets
 * *twice when it appears more than once with another value. */
static const char *header(const char *head, const char *name, size_t *vlen, int *twice)
{
    size_t nl = strlen(name);
    const char *found = NULL;
    *twice = 0;
    for (const char *l = strstr(head, "\r\n"); l && l[2] != '\r'; l = strstr(l + 2, "\r\n")) {
        const char *p = l + 2;
        if (strncasecmp(p, name, nl) || p[nl] != ':') continue;
        const char *v = p + nl + 1, *e = strstr(v, "\r\n");
        while (*v == ' ' || *v == '\t') v++;
        size_t n = (size_t)(e - v);
        while (n && (v[n - 1] == ' ' || v[n - 1] == '\t')) n--;
        if (found && (n != *vlen || memcmp(found, v, n))) *twice = 1;
        found = v;
        *vlen = n;
    }
    return found;
}

/* The head's refusal, if any (e->status 0: none). head ends with "\r\n\r\n" and a NUL. */
static void judge(const char *head, req_error *e)
{
    e->status = 0;
    const char *eol = strstr(head, "\r\n"), *sp1 = memchr(head, ' ', (size_t)(eol - head));
    const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', (size_t)(eol - sp1 - 1)) : NULL;
    if (!sp1 || !sp2 || sp1 == head || sp2 == sp1 + 1) {
        req_error_set(e, 400, NULL, "invalid_request_line", "the request line is not METHOD PATH HTTP/1.1");
        return;
    }
    size_t vn = (size_t)(eol - sp2 - 1);
    if (!(vn == 8 && (!memcmp(sp2 + 1, "HTTP/1.1", 8) || !memcmp(sp2 + 1, "HTTP/1.0", 8)))) {
        req_error_set(e, 505, NULL, "http_version_not_supported", "HTTP version '%.*s': this server speaks "
                      "HTTP/1.0 and HTTP/1.1", (int)(vn < 20 ? vn : 20), sp2 + 1);
        return;
    }
    size_t n = 0;
    int twice;
    const char *cl = header(head, "Content-Length", &n, &twice);
    int digits = cl && n > 0 && n <= 19;
    for (size_t i = 0; digits && i < n; i++) digits = cl[i] >= '0' && cl[i] <= '9';
    if (cl && (!digits || twice))
        req_error_set(e, 400, NULL, "invalid_content_length", "Content-Length '%.*s'%s: expected one number of "
                      "bytes", (int)(n < 40 ? n : 40), cl, twice ? " (given twice, differently)" : "");
}

/* A refusal sent by hand (libmicrohttpd never sees this connection), then the connection closed
 * after the client has had a moment to read it. */
static void refuse(server *srv, int fd, const char *head, const req_error *e, const char *client)
{
    char *body = reply_error_json(e);
    const char *reason = e->status == 505 ? "HTTP Version Not Supported" : e->status == 414 ? "URI Too Long"
                       : e->status == 431 ? "Request Header Fields Too Large" : "Bad Request";
    char *msg = NULL;
    int len = asprintf(&msg, "HTTP/1.1 %u %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                       "Connection: close\r\n\r\n%s", e->status, reason, body ? strlen(body) : 0, body ? body : "");
    if (len > 0) (void)!send(fd, msg, (size_t)len, MSG_NOSIGNAL);
    free(msg);
    free(body);
    shutdown(fd, SHUT_WR);
    char sink[4096];   /* read what the client still sends, so the close is not a reset */
    double until = now_s() + 0.5;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (now_s() < until && poll(&p, 1, 50) >= 0)
        if ((p.revents & POLLIN) && recv(fd, sink, sizeof sink, MSG_DONTWAIT) <= 0) break;
    close(fd);
    char method[16] = "-";
    sscanf(head, "%15s", method);
    serve_log_line(srv, "%s %s - %u prompt_tokens=0 completion_tokens=0 ttft_ms=- batch=- ms=0.0", client, method, e->status);
}

/* Reads ahead until the head is whole: 1 with head filled, 0 when refused (e set), -1 when the
 * client left, the deadline passed or the server stops (the connection is just closed). */
static int read_head(server *srv, int fd, char *head, req_error *e)
{
    double deadline = now_s() + srv->idle_s;
    ssize_t last = -1;
    while (!srv->door->stop && now_s() < deadline) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 100) < 0 && errno != EINTR) return -1;
        if (!(p.revents & (POLLIN | POLLHUP | POLLERR))) continue;
        ssize_t n = recv(fd, head, HEAD_MAX, MSG_PEEK | MSG_DONTWAIT);
        if (n <= 0) return -1;
        head[n] = 0;
        if (memchr(head, 0, (size_t)n)) n = (ssize_t)strlen(head);   /* a NUL in a head: judged as cut there */
        char *end = strstr(head, "\r\n\r\n");
        if (end) {
            end[4] = 0;
            return 1;
        }
        if (n >= HEAD_MAX) {
            int line = strstr(head, "\r\n") != NULL;
            req_error_set(e, line ? 431 : 414, NULL, line ? "headers_too_large" : "uri_too_long", line ? "the "
                          "headers are longer than %d bytes" : "the request line is longer than %d bytes", HEAD_MAX);
            return 0;
        }
        if (n == last) usleep(PEEK_WAIT_MS * 1000);   /* nothing new yet: the same bytes peeked again */
        last = n;
    }
    return -1;
}

static void *check_main(void *arg)
{
    arrival *a = arg;
    server *srv = a->srv;
    char *head = malloc(HEAD_MAX + 1), client[64] = "?";
    getnameinfo((struct sockaddr *)&a->addr, a->len, client, sizeof client, NULL, 0, NI_NUMERICHOST);
    req_error e = {0};
    int got = head ? read_head(srv, a->fd, head, &e) : -1;
    if (got == 1) judge(head, &e);
    if (got < 0) close(a->fd);
    else if (e.status) refuse(srv, a->fd, head, &e, client);
    else if (MHD_add_connection(srv->daemon, a->fd, (struct sockaddr *)&a->addr, a->len) != MHD_YES) {
        /* closed by libmicrohttpd */
    }
    free(head);
    free(a);
    door *d = srv->door;
    pthread_mutex_lock(&d->mu);
    if (--d->checking == 0) pthread_cond_broadcast(&d->none_left);
    pthread_mutex_unlock(&d->mu);
    return NULL;
}

/* One connection to read ahead, on a thread of its own (a slow client holds only its own). */
static void arrive(server *srv, int fd, const struct sockaddr_storage *addr, socklen_t len)
{
    door *d = srv->door;
    arrival *a = calloc(1, sizeof *a);
    pthread_mutex_lock(&d->mu);
    int room = d->checking < MAX_CHECKING;
    if (room && a) d->checking++;
    pthread_mutex_unlock(&d->mu);
    if (!room || !a) {   /* too many at the door at once: the newest waits its turn elsewhere */
        free(a);
        close(fd);
        return;
    }
    *a = (arrival){.srv = srv, .fd = fd, .addr = *addr, .len = len};
    pthread_attr_t at;
    pthread_attr_init(&at);
    pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    if (pthread_create(&t, &at, check_main, a)) {
        close(fd);
        free(a);
        pthread_mutex_lock(&d->mu);
        if (--d->checking == 0) pthread_cond_broadcast(&d->none_left);
        pthread_mutex_unlock(&d->mu);
    }
    pthread_attr_destroy(&at);
}

static void *door_main(void *arg)
{
    server *srv = arg;
    door *d = srv->door;
    struct pollfd p[2] = {{.fd = d->fd, .events = POLLIN}, {.fd = d->wake[0], .events = POLLIN}};
    while (!d->stop) {
        if (poll(p, 2, -1) < 0 && errno != EINTR) break;
        if (p[1].revents) break;
        if (!(p[0].revents & POLLIN)) continue;
        struct sockaddr_storage addr;
        socklen_t len = sizeof addr;
        int fd = tl_accept_cloexec(d->fd, (struct sockaddr *)&addr, &len);
        if (fd >= 0) arrive(srv, fd, &addr, len);
    }
    return NULL;
}

/* Listening on addr; the port it got in *port. */
int door_open(server *srv, const struct sockaddr_storage *addr, unsigned *port, int *err_no)
{
    door *d = calloc(1, sizeof *d);
    if (!d) return *err_no = ENOMEM, -1;
    d->fd = tl_socket_cloexec(addr->ss_family, SOCK_STREAM, 0);
    int one = 1;
    socklen_t len = addr->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    struct sockaddr_storage got;
    socklen_t glen = sizeof got;
    if (d->fd < 0 || setsockopt(d->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) ||
        bind(d->fd, (const struct sockaddr *)addr, len) || listen(d->fd, 128) ||
        getsockname(d->fd, (struct sockaddr *)&got, &glen) || tl_pipe_cloexec(d->wake)) {
        *err_no = errno;
        if (d->fd >= 0) close(d->fd);
        free(d);
        return -1;
    }
    *port = ntohs(got.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&got)->sin6_port
                                            : ((struct sockaddr_in *)&got)->sin_port);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->none_left, NULL);
    srv->door = d;
    return 0;
}

int door_start(server *srv)
{
    return pthread_create(&srv->door->thread, NULL, door_main, srv) ? -1 : 0;
}

/* No new connection, and none still being read ahead (each gives up within 100 ms). */
void door_close(server *srv, int started)
{
    door *d = srv->door;
    if (!d) return;
    d->stop = 1;
    if (started) {
        (void)!write(d->wake[1], "x", 1);
        pthread_join(d->thread, NULL);
    }
    pthread_mutex_lock(&d->mu);
    while (d->checking) pthread_cond_wait(&d->none_left, &d->mu);
    pthread_mutex_unlock(&d->mu);
    close(d->fd);
    close(d->wake[0]);
    close(d->wake[1]);
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->none_left);
    free(d);
    srv->door = NULL;
}
