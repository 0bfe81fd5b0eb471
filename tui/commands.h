/* Subcommands of the tokenloop program. Each returns the process exit status:
 * 0 success, 1 bad input or failure at run time, 2 bad usage. */
#ifndef TOKENLOOP_COMMANDS_H
#define TOKENLOOP_COMMANDS_H

int cmd_info(int argc, char **argv);
int cmd_generate(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_template(int argc, char **argv);
int cmd_tui(int argc, char **argv);
int cmd_lesson(int argc, char **argv);
/* `tokenloop serve`: built when libmicrohttpd is found (TL_HAVE_SERVE). */
int cmd_serve(int argc, char **argv);
/* `tokenloop bench --tokenizer ...`: cmd_bench hands over to this one. */
int cmd_bench_tokenizer(int argc, char **argv);
/* `tokenloop bench --template ...`: likewise. */
int cmd_bench_template(int argc, char **argv);
/* `tokenloop bench --sampler ...`: likewise. */
int cmd_bench_sampler(int argc, char **argv);

/* "tokenloop: <what>" on stderr; returns status. */
int cli_fail(int status, const char *fmt, ...);

#endif
