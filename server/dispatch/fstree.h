/*
 * fstree - walks over a folder that another user can write, safe to make as
 * root: giving what root owns in it away, removing it, adding up its size.
 *
 * The kernelbench build cache belongs to uid 65534, and a build's module
 * (hostile code, running as 65534) may have left anything in it: links to
 * anywhere, hard links, folders it swaps for links while a walk runs. So
 * these walks name nothing by a path longer than one component: each folder
 * is opened from its parent's descriptor with O_NOFOLLOW and walked through
 * its own descriptor, each entry is acted on relative to the descriptor of
 * the folder that holds it, and a link is never followed (a link itself is
 * given away or removed, never its target). They stay on the top's file
 * system (no mount point is crossed) and go FSTREE_DEPTH_MAX folders deep
 * at most. Every walk is post-order: a folder's entries before the folder.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

/* How many folders deep a walk goes beneath its top (the top is depth 0) */
#define FSTREE_DEPTH_MAX 32
/* fstree_remove_at(): passes over what was too deep, each FSTREE_DEPTH_MAX - 1 folders deeper */
#define FSTREE_REMOVE_PASSES_MAX 64

int fstree_own_at(int dirfd, const char *name, uid_t uid, gid_t gid, unsigned *ret_left);
int fstree_remove_at(int dirfd, const char *name);
int fstree_size_at(int dirfd, const char *name, uint64_t *ret_bytes);
