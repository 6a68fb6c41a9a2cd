/*
 * netns - a private network namespace: no interface but a loopback that is
 * down, so no address (not even 127.0.0.1, where the supervisor listens) can
 * be reached. Abstract unix sockets are per network namespace, so those of
 * the host are out of reach too.
 *
 * As root, unshare(CLONE_NEWNET) directly. Otherwise a user namespace comes
 * first (it grants CAP_SYS_ADMIN over the new network namespace), with the
 * caller's own uid and gid mapped to themselves and setgroups denied; proc.c
 * drops the capabilities the user namespace gave. Both need a single-threaded
 * caller. Where the kernel refuses (user namespaces disabled, seccomp of a
 * container runtime), the layer is reported inactive with the reason.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "sandbox/layers.h"

static int write_file(const char *path, const char *text)
{
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        int r = 0;

        if (fd < 0)
                return -errno;
        size_t n = strlen(text);
        if (write(fd, text, n) != (ssize_t)n)
                r = errno ? -errno : -EIO;
        close(fd);
        return r;
}

/* Count the interfaces of the current network namespace and whether any is up
 * (from /proc/self/net/dev and SIOCGIFFLAGS would need a socket; the count
 * and names are enough to report). */
static int count_interfaces(char *names, size_t size)
{
        FILE *f = fopen("/proc/self/net/dev", "re");
        char line[512];
        int n = 0;
        size_t off = 0;

        if (!f)
                return -errno;
        names[0] = '\0';
        while (fgets(line, sizeof(line), f)) {
                char *colon = strchr(line, ':');
                if (!colon)
                        continue;   /* the two header lines */
                *colon = '\0';
                const char *name = line + strspn(line, " ");
                int w = snprintf(names + off, size - off, "%s%s", n ? "," : "", name);
                if (w > 0 && (size_t)w < size - off)
                        off += (size_t)w;
                n++;
        }
        fclose(f);
        return n;
}

/*
 * sandbox_netns_apply() - move the calling (single-threaded) process into a
 * new, empty network namespace.
 * @layers: report object; borrowed
 *
 * Return: 0 (the layer is active, or reported unavailable with the reason),
 * or a negative errno when the namespace was created but could not be set up.
 */
int sandbox_netns_apply(json_t *layers)
{
        char names[256], map[64];
        uid_t uid = geteuid();
        gid_t gid = getegid();
        const char *how;
        int r = 0;

        if (uid == 0) {
                how = "unshare(CLONE_NEWNET)";
                if (unshare(CLONE_NEWNET) < 0) {
                        sandbox_report_add(layers, "netns", false, "%s: %s", how, strerror(errno));
                        goto out;
                }
        } else {
                how = "unshare(CLONE_NEWUSER|CLONE_NEWNET)";
                /* A non-dumpable process (after a uid change) cannot write its
                 * own maps: /proc/self is then owned by root. proc.c makes it
                 * non-dumpable again right after. */
                if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0) {
                        sandbox_report_add(layers, "netns", false, "prctl: %s", strerror(errno));
                        goto out;
                }
                if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0) {
                        sandbox_report_add(layers, "netns", false, "%s: %s", how, strerror(errno));
                        goto out;
                }
                /* Map only ourselves; without a map we would be the overflow
                 * uid and lose access to our own files. */
                r = write_file("/proc/self/setgroups", "deny");
                if (r < 0 && r != -ENOENT)
                        goto fail;
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)uid, (unsigned)uid);
                r = write_file("/proc/self/uid_map", map);
                if (r < 0)
                        goto fail;
                snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)gid, (unsigned)gid);
                r = write_file("/proc/self/gid_map", map);
                if (r < 0)
                        goto fail;
        }
        int n = count_interfaces(names, sizeof(names));
        if (n < 0) {
                sandbox_report_add(layers, "netns", true, "%s; interfaces unknown: %s", how,
                                   strerror(-n));
        } else {
                sandbox_report_add(layers, "netns", true, "%s; %d interface(s): %s (down)", how, n,
                                   names);
        }
        r = 0;
        goto out;
fail:
        sandbox_report_add(layers, "netns", false, "%s: setting up the user namespace: %s", how,
                           strerror(-r));
out:
        return r;
}
