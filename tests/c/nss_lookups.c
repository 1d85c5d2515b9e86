/*
** nss_lookups: getaddrinfo from several threads at once, then from the
** child of a fork: what a threaded daemon that forks its workers does
** through glibc's NSS, whichever module nsswitch.conf names.  It links no
** library of this project: glibc loads the module.
**
**   nss_lookups NAME THREADS ROUNDS
**
** Each thread looks NAME up ROUNDS times (AF_UNSPEC, SOCK_STREAM) and
** compares every answer with the main thread's first.  Once they are done
** (their thread states left behind in the module's interpreter), the main
** thread forks; the child looks NAME up once and exits.  The fork is not
** taken while another thread is inside getaddrinfo: glibc's own locks
** (__check_pf's) are not made anew in a child, which may then wait for
** ever, whatever the module (POSIX: only async-signal-safe functions in the
** child of a multithreaded process).  Prints "answer <addresses>",
** "threads <THREADS * ROUNDS> same", "child same"; exit status 0 when every
** lookup gave the same addresses, 1 otherwise (each difference printed), 2
** for a usage error.
*/
#define _GNU_SOURCE 1
#include <netdb.h>
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nss_answer.h"

static const char *name;
static int rounds;
static char first[1024];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int differences = 0, done = 0;

/* The addresses of one lookup, in order, as text; or "error <gai code>". */
static void lookup(char *out, size_t size)
{
    int rc = nss_answer(name, out, size);
    if (rc != 0)
        snprintf(out, size, "error %d", rc);
}

static void *worker(void *arg)
{
    char got[1024];
    int i;
    (void)arg;
    for (i = 0; i < rounds; i++) {
        lookup(got, sizeof got);
        pthread_mutex_lock(&lock);
        if (strcmp(got, first) != 0) {
            differences++;
            printf("thread answer differs: %s\n", got);
        }
        done++;
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    pthread_t threads[64];
    int n, i, status;
    pid_t child;
    if (argc != 4 || (n = atoi(argv[2])) < 1 || n > 64 || (rounds = atoi(argv[3])) < 1) {
        fprintf(stderr, "usage: nss_lookups NAME THREADS ROUNDS\n");
        return 2;
    }
    name = argv[1];
    lookup(first, sizeof first);
    printf("answer %s\n", first);
    fflush(stdout);
    for (i = 0; i < n; i++)
        pthread_create(&threads[i], NULL, worker, NULL);
    for (i = 0; i < n; i++)
        pthread_join(threads[i], NULL);
    printf("threads %d %s\n", done, differences ? "differ" : "same");
    fflush(stdout);
    child = fork();
    if (child == 0) {
        char got[1024];
        lookup(got, sizeof got);
        printf("child %s\n", strcmp(got, first) == 0 ? "same" : got);
        fflush(stdout);
        _exit(strcmp(got, first) != 0);
    }
    if (child < 0 || waitpid(child, &status, 0) != child) {
        printf("fork failed\n");
        return 1;
    }
    return differences || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}
