// SPDX-License-Identifier: GPL-2.0
/*
 * pyz: run `python3 ARGS...` in the guest's Python that has pyverbs
 * imported already (tests/vm/pyzygote.py), or exec python3 itself if that
 * server is not there.
 *
 *   pyz SCRIPT [ARGS...]    as python3 SCRIPT ARGS...
 *   pyz -c CODE [ARGS...]   as python3 -c CODE ARGS...
 *
 * The server is found at $RXE_PYZ_SOCKET (default /tmp/rxe-pyz.sock). pyz
 * hands it this process's descriptors 0-2, network and mount namespaces,
 * working directory and environment, passes on the signals it gets
 * (SIGTERM from timeout(1), SIGINT, SIGHUP, SIGQUIT, SIGUSR1/2), and ends
 * as the script did: with its exit status, or killed by its signal. If pyz
 * is killed outright, the server kills the script. Static, built on the
 * host by scripts/test.sh (a process start is the cost this saves).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

extern char **environ;

static int server = -1;

static void fall_back(char **argv)
{
	argv[0] = "python3";
	execv("/usr/bin/python3", argv);
	perror("pyz: exec /usr/bin/python3");
	exit(127);
}

static void forward(int sig)
{
	char line[16];
	int n = snprintf(line, sizeof(line), "K%d\n", sig);
	ssize_t done = write(server, line, n);

	(void)done;
}

/* Appends s and its NUL to the request buffer. */
static int put(char **buf, size_t *len, size_t *cap, const char *s)
{
	size_t n = strlen(s) + 1;

	if (*len + n > *cap) {
		size_t want = (*cap + n) * 2;
		char *bigger = realloc(*buf, want);

		if (!bigger)
			return -1;
		*buf = bigger;
		*cap = want;
	}
	memcpy(*buf + *len, s, n);
	*len += n;
	return 0;
}

int main(int argc, char **argv)
{
	const char *path = getenv("RXE_PYZ_SOCKET");
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	char *buf = NULL, cwd[4096], reply[32];
	size_t len = 4, cap = 0, got = 0;
	int fds[5] = { 0, 1, 2, -1, -1 };
	static const int sigs[] = { SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	unsigned int i;

	if (argc < 2 || (argv[1][0] == '-' && strcmp(argv[1], "-c")))
		fall_back(argv);
	if (!path || !*path)
		path = "/tmp/rxe-pyz.sock";
	if (strlen(path) >= sizeof(addr.sun_path))
		fall_back(argv);
	strcpy(addr.sun_path, path);
	server = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (server < 0 || connect(server, (struct sockaddr *)&addr, sizeof(addr)))
		fall_back(argv);

	if (!getcwd(cwd, sizeof(cwd)))
		strcpy(cwd, "/");
	buf = calloc(1, 4096);
	cap = 4096;
	if (!buf || put(&buf, &len, &cap, cwd) || put(&buf, &len, &cap, "argv"))
		goto nomem;
	for (i = 1; i < (unsigned int)argc; i++)
		if (put(&buf, &len, &cap, argv[i]))
			goto nomem;
	if (put(&buf, &len, &cap, "env"))
		goto nomem;
	for (char **e = environ; *e; e++)
		if (put(&buf, &len, &cap, *e))
			goto nomem;
	len--; /* no NUL after the last field */
	{
		uint32_t body = len - 4;

		memcpy(buf, &body, 4); /* little-endian: x86 */
	}
	fds[3] = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	fds[4] = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
	if (fds[3] < 0 || fds[4] < 0) {
		perror("pyz: /proc/self/ns");
		return 127;
	}

	/* The first bytes carry the descriptors. */
	{
		char control[CMSG_SPACE(sizeof(fds))] = { 0 };
		struct iovec iov = { .iov_base = buf, .iov_len = 4 };
		struct msghdr msg = {
			.msg_iov = &iov, .msg_iovlen = 1,
			.msg_control = control, .msg_controllen = sizeof(control),
		};
		struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);

		cmsg->cmsg_level = SOL_SOCKET;
		cmsg->cmsg_type = SCM_RIGHTS;
		cmsg->cmsg_len = CMSG_LEN(sizeof(fds));
		memcpy(CMSG_DATA(cmsg), fds, sizeof(fds));
		if (sendmsg(server, &msg, 0) != 4) {
			perror("pyz: sendmsg");
			return 127;
		}
	}
	for (size_t off = 4; off < len;) {
		ssize_t n = write(server, buf + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			perror("pyz: write");
			return 127;
		}
		off += n;
	}
	close(fds[3]);
	close(fds[4]);

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		struct sigaction sa = { .sa_handler = forward, .sa_flags = SA_RESTART };

		sigaction(sigs[i], &sa, NULL);
	}

	while (got < sizeof(reply) - 1) {
		ssize_t n = read(server, reply + got, sizeof(reply) - 1 - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
		if (memchr(reply, '\n', got))
			break;
	}
	reply[got] = 0;
	if (reply[0] == 'X')
		return atoi(reply + 1);
	if (reply[0] == 'S') {
		int sig = atoi(reply + 1);

		signal(sig, SIG_DFL);
		raise(sig);
		return 128 + sig;
	}
	fprintf(stderr, "pyz: the server ended without a status\n");
	return 255;
nomem:
	fprintf(stderr, "pyz: out of memory\n");
	return 127;
}
