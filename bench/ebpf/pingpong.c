// A request/response workload for bench/ebpf/offcpu.sh: PAIRS pairs of threads, a client
// that sends one byte over a pipe every PAUSE_US microseconds and a server that answers it,
// so that every request blocks and wakes threads like a small RPC service does: each
// round trip is four context switches (the client's sleep and wait, the server's wait).
//
//   pingpong [pairs] [pause_us]
#include <pthread.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static long pause_us = 500;

struct pair {
	int to_server[2];
	int to_client[2];
};

static void *server(void *arg)
{
	struct pair *p = arg;
	char c;
	while (read(p->to_server[0], &c, 1) == 1)
		if (write(p->to_client[1], &c, 1) != 1)
			break;
	return NULL;
}

static void *client(void *arg)
{
	struct pair *p = arg;
	struct timespec ts = { 0, pause_us * 1000 };
	char c = 'x';
	for (;;) {
		nanosleep(&ts, NULL);
		if (write(p->to_server[1], &c, 1) != 1 || read(p->to_client[0], &c, 1) != 1)
			break;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	int pairs = argc > 1 ? atoi(argv[1]) : 4;
	if (argc > 2)
		pause_us = atol(argv[2]);
	pthread_t t;
	for (int i = 0; i < pairs; i++) {
		struct pair *p = calloc(1, sizeof(*p));
		if (!p || pipe(p->to_server) || pipe(p->to_client))
			return 1;
		pthread_create(&t, NULL, server, p);
		pthread_create(&t, NULL, client, p);
	}
	pause();
	return 0;
}
