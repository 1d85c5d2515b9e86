/*
** nss_cancel: threads cancelled inside host lookups, with whatever NSS
** module nsswitch.conf names (it links no library of this project), and
** what that leaves behind.
**
**   nss_cancel storm NAME THREADS ROUNDS
**       ROUNDS times: THREADS threads each looping getaddrinfo(NAME), then,
**       after 1 to 20 ms (varying by round), each cancelled and joined.
**       Prints "storm: ROUNDS rounds" once every round is joined; a round
**       whose threads are not all joined within 60 s prints "hang in round
**       N" and exits 3.
**   nss_cancel waiting NAME COUNT
**       COUNT threads each in getaddrinfo(NAME) (a name whose replies never
**       come), 300 ms for every one of them to be waiting, then each
**       cancelled and joined; twice, the first time to warm up (the module
**       loaded, its first-lookup memory taken, and the thread stacks that
**       glibc keeps for reuse made, each with the thread-local blocks of
**       the modules loaded since).  Prints "waiting: COUNT joined,
**       descriptors +D, heap +H": the process's open descriptors and
**       malloc's bytes in use, after the second time against before it.
**       Every thread allocates from one arena (M_ARENA_MAX 1): with an arena
**       per thread, what glibc counts in use moved by up to 16 KiB between
**       two rounds that leaked nothing; with one, by a few hundred bytes
**       (the thread-local blocks of the stacks glibc keeps).  NAME should end
**       in a dot: a relative name goes on to resolv.conf's search list, whose
**       replies a module may parse with an interpreter whose own memory
**       moves by a hundred KiB and more from round to round.
**
** Exit status 0, 3 on a hang, 2 on a usage error.
*/
#define _GNU_SOURCE 1
#include <dirent.h>
#include <malloc.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static const char *name;

static void lookup(void)
{
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_socktype = SOCK_STREAM;
    if (getaddrinfo(name, NULL, &hints, &res) == 0)
        freeaddrinfo(res);
}

static void *looping(void *arg)
{
    (void)arg;
    for (;;)
        lookup();
    return NULL;
}

static void *once(void *arg)
{
    (void)arg;
    lookup();
    return NULL;
}

static int descriptors(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL)
        n += e->d_name[0] != '.';
    closedir(d);
    return n - 1; /* the directory's own */
}

/* Joins t within the deadline (a monotonic second count): 0, or -1. */
static int join_by(pthread_t t, time_t deadline)
{
    struct timespec at;
    clock_gettime(CLOCK_REALTIME, &at);
    at.tv_sec += deadline;
    return pthread_timedjoin_np(t, NULL, &at) == 0 ? 0 : -1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int storm(int threads, int rounds)
{
    pthread_t *t = calloc((size_t)threads, sizeof *t);
    int r, i;
    if (t == NULL)
        return 2;
    for (r = 0; r < rounds; r++) {
        for (i = 0; i < threads; i++)
            pthread_create(&t[i], NULL, looping, NULL);
        sleep_ms(1 + r % 20);
        for (i = 0; i < threads; i++)
            pthread_cancel(t[i]);
        for (i = 0; i < threads; i++)
            if (join_by(t[i], 60) != 0) {
                printf("hang in round %d\n", r);
                fflush(stdout);
                _exit(3);
            }
    }
    printf("storm: %d rounds\n", rounds);
    free(t);
    return 0;
}

/* COUNT threads waiting in a lookup, cancelled and joined. */
static void cancel_waiting(pthread_t *t, int count)
{
    int i;
    for (i = 0; i < count; i++)
        pthread_create(&t[i], NULL, once, NULL);
    sleep_ms(300);
    for (i = 0; i < count; i++)
        pthread_cancel(t[i]);
    for (i = 0; i < count; i++)
        if (join_by(t[i], 120) != 0) {
            printf("hang joining thread %d\n", i);
            fflush(stdout);
            _exit(3);
        }
}

static int waiting(int count)
{
    pthread_t *t = calloc((size_t)count, sizeof *t);
    struct mallinfo2 before, after;
    int fds;
    if (t == NULL)
        return 2;
    lookup();
    cancel_waiting(t, count);
    fds = descriptors();
    before = mallinfo2();
    cancel_waiting(t, count);
    after = mallinfo2();
    printf("waiting: %d joined, descriptors %+d, heap %+ld\n", count, descriptors() - fds,
           (long)after.uordblks - (long)before.uordblks);
    free(t);
    return 0;
}

int main(int argc, char **argv)
{
    mallopt(M_ARENA_MAX, 1);
    if (argc == 5 && strcmp(argv[1], "storm") == 0) {
        name = argv[2];
        return storm(atoi(argv[3]), atoi(argv[4]));
    }
    if (argc == 4 && strcmp(argv[1], "waiting") == 0) {
        name = argv[2];
        return waiting(atoi(argv[3]));
    }
    fprintf(stderr, "usage: nss_cancel storm NAME THREADS ROUNDS | waiting NAME COUNT\n");
    return 2;
}
