/*
 * landlock - the file system (and TCP) allowlist of a worker, with raw
 * Landlock system calls: the build host's <linux/landlock.h> may predate the
 * rights used here, so the ABI constants are spelt out below and every right
 * is only asked for when the running kernel's ABI knows it.
 *
 * Compile profile: read-only access to the CUDA toolkit's include and
 * library folders, the folders the dynamic loader searches (nvrtc dlopens its
 * builtins on the first compile; nvJitLink dlopens libcuda.so.1 where there
 * is one), /etc/ld.so.cache, the folders of LD_LIBRARY_PATH, /dev/urandom;
 * read-write /dev/null. Nothing else: `#include "/etc/passwd"` or
 * "/proc/self/environ" fails to open (EACCES). No right to execute anything.
 * GPU profile: the same, plus the /dev/nvidia nodes (read, write, device ioctls on
 * ABI >= 5), read-only /proc and /sys (the driver reads /proc/driver/nvidia,
 * /proc/devices, /proc/self, /sys/bus/pci, /sys/devices at cuInit).
 * Torch run profile (kevald-torch --role run): the GPU profile's paths, plus
 * read-only the trees of SandboxPaths.read (the Python installation, the
 * worker's package, the artifact root where the build role left the
 * extensions) and a few public files of /etc Python and torch read at import.
 * Torch build profile: the compile profile's read-only paths, plus the C++
 * headers (/usr/include, /usr/local/include), /proc read-only, the right to
 * execute beneath the toolchain's folders (/usr/bin, /bin, /usr/lib for
 * cc1plus and ld, /usr/libexec, /usr/local/bin, the toolkit's bin and
 * nvvm/bin, SandboxPaths.exec: Python's and ninja's folders), and every file
 * right but execute beneath the one tree SandboxPaths.write (the artifact
 * root). Nothing else is writable; nothing is executable in the write tree.
 * The build role's per-job child applies the build profile a second time
 * (sandbox_narrow()) with the same read and exec trees and its job's build
 * folder as SandboxPaths.write: layers stack and the intersection applies,
 * so the job's module can write and read only its own build folder of the
 * artifact root, and nothing it does regains the first layer's wider rights.
 * Both: on ABI >= 4 every TCP bind and connect is denied; on ABI >= 6 the
 * process cannot reach abstract unix sockets or send signals outside its
 * Landlock domain (other workers, the supervisor).
 *
 * Rules attach to inodes: opening each path follows its symlinks, so the
 * realpaths (/usr/local/cuda -> cuda-13.0, lib64 -> lib) are what is granted.
 * Paths that do not exist on this host are skipped and counted. Landlock
 * applies to the calling thread and its future children only, so
 * sandbox_enter() requires a single-threaded process.
 */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/layers.h"

#ifndef SYS_landlock_create_ruleset
#define SYS_landlock_create_ruleset 444
#define SYS_landlock_add_rule 445
#define SYS_landlock_restrict_self 446
#endif

#define LL_CREATE_RULESET_VERSION (1u << 0)
#define LL_RULE_PATH_BENEATH 1
#define LL_RULE_NET_PORT 2

#define LL_FS_EXECUTE (1ull << 0)
#define LL_FS_WRITE_FILE (1ull << 1)
#define LL_FS_READ_FILE (1ull << 2)
#define LL_FS_READ_DIR (1ull << 3)
#define LL_FS_REMOVE_DIR (1ull << 4)
#define LL_FS_REMOVE_FILE (1ull << 5)
#define LL_FS_MAKE_CHAR (1ull << 6)
#define LL_FS_MAKE_DIR (1ull << 7)
#define LL_FS_MAKE_REG (1ull << 8)
#define LL_FS_MAKE_SOCK (1ull << 9)
#define LL_FS_MAKE_FIFO (1ull << 10)
#define LL_FS_MAKE_BLOCK (1ull << 11)
#define LL_FS_MAKE_SYM (1ull << 12)
#define LL_FS_REFER (1ull << 13)      /* ABI 2 */
#define LL_FS_TRUNCATE (1ull << 14)   /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ull << 15)  /* ABI 5 */
#define LL_NET_BIND_TCP (1ull << 0)   /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ull << 1)
#define LL_SCOPE_ABSTRACT_UNIX_SOCKET (1ull << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ull << 1)

struct ll_ruleset_attr {
        uint64_t handled_access_fs;
        uint64_t handled_access_net;
        uint64_t scoped;
};

struct ll_path_beneath_attr {
        uint64_t allowed_access;
        int32_t parent_fd;
} __attribute__((packed));

#define LL_READ (LL_FS_READ_FILE | LL_FS_READ_DIR)
#define LL_FILE_RIGHTS (LL_FS_EXECUTE | LL_FS_WRITE_FILE | LL_FS_READ_FILE | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

/**
 * sandbox_landlock_abi() - the Landlock ABI version of the running kernel
 * Return: the version (>= 1), or a negative errno: -ENOSYS (kernel without
 * Landlock), -EOPNOTSUPP (built in but disabled at boot).
 */
int sandbox_landlock_abi(void)
{
        long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LL_CREATE_RULESET_VERSION);
        return v < 0 ? -errno : (int)v;
}

typedef struct {
        int ruleset;
        uint64_t handled;
        int granted, missing;
} Rules;

/* Grant @access beneath @path (or on the file @path). Missing paths are
 * counted, not fatal. */
static int grant(Rules *rs, const char *path, uint64_t access)
{
        struct ll_path_beneath_attr pb;
        struct stat st;
        int fd = open(path, O_PATH | O_CLOEXEC);
        int r = 0;

        if (fd < 0) {
                if (errno == ENOENT || errno == ENOTDIR || errno == EACCES) {
                        rs->missing++;
                        return 0;
                }
                return -errno;
        }
        if (fstat(fd, &st) < 0) {
                r = -errno;
                goto out;
        }
        if (!S_ISDIR(st.st_mode))
                access &= LL_FILE_RIGHTS;
        pb.allowed_access = access & rs->handled;
        pb.parent_fd = fd;
        if (syscall(SYS_landlock_add_rule, rs->ruleset, LL_RULE_PATH_BENEATH, &pb, 0) < 0) {
                r = -errno;
                goto out;
        }
        rs->granted++;
out:
        close(fd);
        return r;
}

static int grant_glob(Rules *rs, const char *pattern, uint64_t access)
{
        glob_t g;
        int r = 0;

        if (glob(pattern, 0, NULL, &g) != 0)
                return 0;
        for (size_t i = 0; i < g.gl_pathc && r == 0; i++)
                r = grant(rs, g.gl_pathv[i], access);
        globfree(&g);
        return r;
}

/* Each folder of a colon-separated list (LD_LIBRARY_PATH). */
static int grant_list(Rules *rs, const char *list, uint64_t access)
{
        char buf[4096];
        int r = 0;

        if (!list || strlen(list) >= sizeof(buf))
                return 0;
        strcpy(buf, list);
        for (char *save = NULL, *p = strtok_r(buf, ":", &save); p && r == 0;
             p = strtok_r(NULL, ":", &save))
                if (p[0] == '/')
                        r = grant(rs, p, access);
        return r;
}

/* Public files of /etc that Python and torch read at import. */
static const char *const etc_public[] = {
        "/etc/localtime", "/etc/passwd", "/etc/group", "/etc/os-release", "/etc/nsswitch.conf",
};

#define LL_WRITE_TREE (LL_READ | LL_FS_WRITE_FILE | LL_FS_REMOVE_DIR | LL_FS_REMOVE_FILE | \
                       LL_FS_MAKE_DIR | LL_FS_MAKE_REG | LL_FS_MAKE_SYM | LL_FS_REFER | LL_FS_TRUNCATE)

/* The torch profiles' rules beyond the compile profile's (add_rules()). */
static int add_torch_rules(Rules *rs, SandboxProfile profile, const SandboxPaths *paths)
{
        static const char *const exec_dirs[] = {
                "/usr/bin", "/bin", "/usr/lib", "/usr/libexec", "/usr/local/bin",
        };
        const char *cuda = getenv("KEVALD_CUDA_HOME");
        char path[4096];
        int r = 0;

        if (!cuda || cuda[0] != '/' || strlen(cuda) > 3000)
                cuda = "/usr/local/cuda";
        for (size_t i = 0; i < sizeof(etc_public) / sizeof(etc_public[0]) && r == 0; i++)
                r = grant(rs, etc_public[i], LL_FS_READ_FILE);
        for (int i = 0; paths && i < paths->n_read && r == 0; i++)
                if (paths->read[i] && paths->read[i][0] == '/')
                        r = grant(rs, paths->read[i], LL_READ);
        if (r < 0 || profile != SANDBOX_PROFILE_TORCH_BUILD)
                return r;
        r = grant(rs, "/usr/include", LL_READ);
        if (r == 0)
                r = grant(rs, "/usr/local/include", LL_READ);
        if (r == 0)
                r = grant(rs, "/proc", LL_READ);
        for (size_t i = 0; i < sizeof(exec_dirs) / sizeof(exec_dirs[0]) && r == 0; i++)
                r = grant(rs, exec_dirs[i], LL_READ | LL_FS_EXECUTE);
        if (r == 0) {
                snprintf(path, sizeof(path), "%s/bin", cuda);
                r = grant(rs, path, LL_READ | LL_FS_EXECUTE);
        }
        if (r == 0) {
                snprintf(path, sizeof(path), "%s/nvvm", cuda);
                r = grant(rs, path, LL_READ | LL_FS_EXECUTE);
        }
        for (int i = 0; i < paths->n_exec && r == 0; i++)
                if (paths->exec[i] && paths->exec[i][0] == '/')
                        r = grant(rs, paths->exec[i], LL_READ | LL_FS_EXECUTE);
        if (r == 0) {
                int before = rs->granted;
                r = grant(rs, paths->write, LL_WRITE_TREE);
                if (r == 0 && rs->granted == before)
                        r = -ENOENT;   /* the write tree must exist: fail closed */
        }
        return r;
}

static int add_rules(Rules *rs, SandboxProfile profile)
{
        static const char *const libdirs[] = {
                "/usr/lib", "/lib", "/lib64", "/usr/lib64", "/usr/lib/x86_64-linux-gnu",
                "/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
        };
        const char *cuda = getenv("KEVALD_CUDA_HOME");
        char path[4096];
        int r = 0;

        if (!cuda || cuda[0] != '/' || strlen(cuda) > 3000)
                cuda = "/usr/local/cuda";
        static const char *const cuda_sub[] = {"include", "lib64", "lib", "targets"};
        for (size_t i = 0; i < sizeof(cuda_sub) / sizeof(cuda_sub[0]) && r == 0; i++) {
                snprintf(path, sizeof(path), "%s/%s", cuda, cuda_sub[i]);
                r = grant(rs, path, LL_READ);
        }
        for (size_t i = 0; i < sizeof(libdirs) / sizeof(libdirs[0]) && r == 0; i++)
                r = grant(rs, libdirs[i], LL_READ);
        if (r == 0)
                r = grant_list(rs, getenv("LD_LIBRARY_PATH"), LL_READ);
        if (r == 0)
                r = grant(rs, "/etc/ld.so.cache", LL_FS_READ_FILE);
        if (r == 0)
                r = grant(rs, "/dev/null", LL_FS_READ_FILE | LL_FS_WRITE_FILE);
        if (r == 0)
                r = grant(rs, "/dev/urandom", LL_FS_READ_FILE);
        if (r == 0 && (profile == SANDBOX_PROFILE_GPU || profile == SANDBOX_PROFILE_TORCH_RUN)) {
                r = grant_glob(rs, "/dev/nvidia*",
                               LL_FS_READ_FILE | LL_FS_WRITE_FILE | LL_FS_IOCTL_DEV | LL_FS_READ_DIR);
                if (r == 0)
                        r = grant(rs, "/proc", LL_READ);
                /* The driver names its threads (pthread_setname_np writes
                 * /proc/self/task/TID/comm); without this cuInit fails with
                 * CUDA_ERROR_OPERATING_SYSTEM (seen on an H100 host). Only
                 * this process's own task folder is writable. */
                if (r == 0)
                        r = grant(rs, "/proc/self/task", LL_READ | LL_FS_WRITE_FILE | LL_FS_TRUNCATE);
                if (r == 0)
                        r = grant(rs, "/sys", LL_READ);
        }
        return r;
}

/*
 * sandbox_landlock_apply() - restrict the file system (and TCP) for the
 * calling thread and everything it starts later.
 * @profile: SANDBOX_PROFILE_COMPILE or SANDBOX_PROFILE_GPU
 *
 * Needs no_new_privs (or CAP_SYS_ADMIN) first.
 * Return: 0 (active, or reported unavailable: no Landlock in this kernel), or
 * a negative errno when Landlock exists but the ruleset could not be built
 * or enforced.
 */
int sandbox_landlock_apply(SandboxProfile profile, json_t *layers)
{
        return sandbox_landlock_apply_paths(profile, NULL, layers);
}

/*
 * sandbox_landlock_apply_paths() - sandbox_landlock_apply() with the extra
 * trees of a torch profile (@paths, borrowed; may be NULL: none; the build
 * profile's write tree must exist, else -ENOENT).
 */
int sandbox_landlock_apply_paths(SandboxProfile profile, const SandboxPaths *paths, json_t *layers)
{
        struct ll_ruleset_attr attr = {0};
        Rules rs = {.ruleset = -1};
        size_t attr_size;
        int abi = sandbox_landlock_abi();
        int r = 0;

        if (abi < 0) {
                sandbox_report_add(layers, "landlock", false, "not available in this kernel: %s",
                                   strerror(-abi));
                goto out;
        }
        attr.handled_access_fs = (LL_FS_MAKE_SYM << 1) - 1;   /* ABI 1 */
        attr_size = sizeof(uint64_t);
        if (abi >= 2)
                attr.handled_access_fs |= LL_FS_REFER;
        if (abi >= 3)
                attr.handled_access_fs |= LL_FS_TRUNCATE;
        if (abi >= 4) {
                attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
                attr_size = 2 * sizeof(uint64_t);
        }
        if (abi >= 5)
                attr.handled_access_fs |= LL_FS_IOCTL_DEV;
        if (abi >= 6) {
                attr.scoped = LL_SCOPE_ABSTRACT_UNIX_SOCKET | LL_SCOPE_SIGNAL;
                attr_size = sizeof(attr);
        }
        rs.handled = attr.handled_access_fs;
        rs.ruleset = (int)syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0);
        if (rs.ruleset < 0) {
                r = -errno;
                sandbox_report_add(layers, "landlock", false, "create_ruleset (ABI %d): %s", abi,
                                   strerror(errno));
                goto out;
        }
        r = add_rules(&rs, profile);
        if (r == 0 && (profile == SANDBOX_PROFILE_TORCH_BUILD || profile == SANDBOX_PROFILE_TORCH_RUN))
                r = add_torch_rules(&rs, profile, paths);
        if (r < 0) {
                sandbox_report_add(layers, "landlock", false, "add_rule: %s", strerror(-r));
                goto out;
        }
        if (syscall(SYS_landlock_restrict_self, rs.ruleset, 0) < 0) {
                r = -errno;
                sandbox_report_add(layers, "landlock", false, "restrict_self: %s", strerror(errno));
                goto out;
        }
        sandbox_report_add(layers, "landlock", true,
                           "ABI %d, %s profile: %d %s paths granted (%d absent here), "
                           "everything else denied%s%s%s%s%s",
                           abi, sandbox_profile_name(profile), rs.granted,
                           profile == SANDBOX_PROFILE_TORCH_BUILD ? "read-only/executable/write-tree"
                                                                  : "read-only/device",
                           rs.missing,
                           profile == SANDBOX_PROFILE_TORCH_BUILD && paths ? "; writable only beneath " : "",
                           profile == SANDBOX_PROFILE_TORCH_BUILD && paths ? paths->write : "",
                           abi >= 4 ? "; TCP bind/connect denied" : "",
                           abi >= 5 && (profile == SANDBOX_PROFILE_GPU || profile == SANDBOX_PROFILE_TORCH_RUN)
                                   ? "; ioctl only on /dev/nvidia*" : "",
                           abi >= 6 ? "; signals and abstract unix sockets scoped" : "");
out:
        if (rs.ruleset >= 0)
                close(rs.ruleset);
        return r;
}
