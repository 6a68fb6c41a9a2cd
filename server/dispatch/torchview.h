/*
 * torchview - what a kevald-torch run worker may read of the kernelbench
 * build cache: a folder of its own holding only its job's extensions.
 *
 * The build cache (<torch_ext_root>/<key>/) holds every job's build: its
 * sources, objects and extension. A run worker's candidate is hostile code
 * in the worker's interpreter; given the whole cache to read, it could read
 * every other submitter's source. So each run worker process reads a view
 * instead: <root>/<name>, where root is <torch_ext_root>.run (beside the
 * cache, never inside it: the cache belongs to the build workers' user,
 * who could rename or replace anything in it), made empty before the
 * worker starts (its sandbox grants it that folder, read-only) and filled
 * with its one job's extensions when the job is sent: each
 * <build>/<ext>/<ext>.so, the file torch's load_inline leaves and the run
 * role imports, linked (or, across file systems, copied) to
 * <view>/<ext>/<ext>.so. Nothing else of the build is: not the source,
 * not the objects, not another job's folder. The view goes when the worker
 * does.
 *
 * The build folder was written by hostile code: it is read through
 * descriptors, one component at a time, with O_NOFOLLOW; a link, or
 * anything but a regular file where an extension should be, is skipped,
 * never followed, and so is a file with a second name (a hard link to
 * another build's file or to one of root's, or one made to defeat the link
 * below); names are checked (no '/', no leading
 * '.'). The view and its folders belong to the server's user, mode 0755:
 * the run worker's user may read them, not change them. Where a link
 * cannot be made (the cache is a mount point of its own), the extension is
 * copied, at most TORCHVIEW_COPY_BYTES_MAX per view.
 *
 * Beside each view, <name>.tools (TORCHVIEW_TOOLS_SUFFIX) is the folder
 * the worker itself makes before it confines itself, for the compiler
 * helper it starts (Triton's ptxas and launcher builds, kevald_torch/
 * tritontools.py), which writes there and nowhere else; the run role reads
 * it. The server does not make it (the helper's user must own it); it
 * removes it with the view, and before making a view of that name.
 *
 * One server per cache: the views' folder is locked (flock on
 * "<root>.lock") for the server's life; a second server on the same
 * torch_ext_dir does not start, rather than remove the first one's views.
 */
#pragma once

#include <stdint.h>

/* A view's name beneath the root: "v" and up to 20 digits */
#define TORCHVIEW_NAME_BYTES 24
/* The worker's own folder beside its view: <name>.tools */
#define TORCHVIEW_TOOLS_SUFFIX ".tools"
/* Extensions linked into one view at most (a module's load_inline calls) */
#define TORCHVIEW_EXTS_MAX 64

/* What a view may hold in copies (where no link can be made) */
#define TORCHVIEW_COPY_BYTES_MAX (256ull << 20)

int torchview_root_make(const char *root, int *ret_lock);
void torchview_root_remove(const char *root, int lock);
int torchview_make(const char *root, uint64_t serial, char ret_name[TORCHVIEW_NAME_BYTES]);
int torchview_fill(const char *root, const char *name, const char *build_dir, unsigned *ret_linked);
int torchview_drop(const char *root, const char *name);
