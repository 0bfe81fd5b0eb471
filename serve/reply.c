/* Answers on a connection, each in OpenAI's shape where it is an error: the primitives http.c,
 * respond.c and door.c share, so none of them calls back into another for them. */
#define _GNU_SOURCE
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "tokenloop/platform_net.h"

/* The status of the answer this connection's thread queued last: every answer goes through
 * reply_queue() below, and with a thread per connection the handler reads it back on the same thread
 * for the access log. */
static __thread unsigned last_status;

unsigned reply_status(void) { return last_status; }
void reply_set_status(unsigned s) { last_status = s; }

enum MHD_Result reply_queue(struct MHD_Connection *c, unsigned code, struct MHD_Response *r)
{
    last_status = code;
    enum MHD_Result ok = MHD_queue_response(c, code, r);
    MHD_destroy_response(r);
    return ok;
}

enum MHD_Result reply_json(struct MHD_Connection *c, unsigned code, const char *json)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(json), (void *)json, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    return reply_queue(c, code, r);
}

/* OpenAI's error body: {"error": {"message", "type", "param", "code"}}; 429 and 503 say when to
 * come back, 405 which methods the path takes (e->param holds them there, not sent as param). */
char *reply_error_json(const req_error *e)
{
    cJSON *root = cJSON_CreateObject(), *o = cJSON_AddObjectToObject(root, "error");
    cJSON_AddStringToObject(o, "message", e->msg);
    cJSON_AddStringToObject(o, "type", e->type);
    if (e->param[0]) cJSON_AddStringToObject(o, "param", e->param);
    else cJSON_AddNullToObject(o, "param");
    if (e->code) cJSON_AddStringToObject(o, "code", e->code);
    else cJSON_AddNullToObject(o, "code");
    char *j = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return j;
}

enum MHD_Result reply_error_allow(struct MHD_Connection *c, const req_error *e, const char *allow)
{
    char *j = reply_error_json(e);
    const char *body = j ? j : "{\"error\":{\"message\":\"out of memory\",\"type\":\"server_error\",\"param\":null,\"code\":null}}";
    struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
    free(j);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", "application/json");
    if (e->status == 429 || e->status == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (allow) MHD_add_response_header(r, "Allow", allow);
    return reply_queue(c, e->status, r);
}

enum MHD_Result reply_error(struct MHD_Connection *c, const req_error *e) { return reply_error_allow(c, e, NULL); }

/* 1 when the client has closed its side or reset: poll without waiting, and a readable socket
 * with nothing to read is an orderly close. Bytes waiting (a pipelined request) are not. */
int reply_client_gone(struct MHD_Connection *c)
{
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return 0;
    struct pollfd p = {.fd = ci->connect_fd, .events = POLLIN | TL_POLLRDHUP};
    if (poll(&p, 1, 0) <= 0) return 0;
    if (p.revents & (POLLHUP | POLLERR | TL_POLLRDHUP)) return 1;
    char b;
    return (p.revents & POLLIN) && recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 0;
}
