/*
 * group - the text of a merged compile (compile_run_group(), compile.h):
 * several CUDA C++ sources in one NVRTC program, so that NVRTC's fixed cost
 * per program (two thirds of a small kernel's compile) is paid once. Each
 * source keeps the result it would get alone; where that is not certain,
 * the source is compiled alone. Pure text: no NVRTC here.
 *
 * The merged program: the headers every member includes (members are
 * merged only with others that include the same headers, all before their
 * code), then each member as
 *
 *     #pragma nv_diagnostic push
 *     #define k <ns>_k                 its extern "C" names, renamed
 *     namespace <ns> {
 *     #line 1 "<ns>.cu"
 *     ...the source...
 *
 *     struct <ns>_end {};
 *     }
 *     #line 1 "__kvg<tag>_w.cu"
 *     static_assert(sizeof(::<ns>::<ns>_end) == 1, "");
 *     #undef k  (and each macro the source defines)
 *     #pragma nv_diagnostic pop
 *
 * where <ns> is "__kvg<tag>_<i>" and the tag a secret number drawn for each
 * group, so no source can name another's namespace. The static_assert
 * fails unless the source left its namespace exactly as it found it: a
 * source that closes it early or leaves a brace open (through a header's
 * macro, which the scanner does not see) fails the whole program in the
 * wrapper's file, and every member is compiled alone. In its namespace a member's
 * file-scope names would hide the global ones that the same names would
 * collide with alone (a helper named like a CUDA math function, a kernel
 * named like a builtin): the probe program (group_probe_source()) asks the
 * global scope about every file-scope name and macro each member declares,
 * and a member with a name that is there is compiled alone.
 *
 * The log of the merged program is split by file: a diagnostic whose first
 * line is in "<ns>.cu" is member i's, with its file, namespace and renamed
 * names written back as they would read alone. One that is in no member's
 * file (a header, the wrapper) leaves every member to be compiled alone.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/compile/merge_scan.h"

#define GROUP_MAX 16          /* members of one merged program */
#define GROUP_NS_BYTES 32
#define GROUP_PROBE_NAMES_MAX 48   /* names one probe program asks about */

typedef struct GroupMember {
        const char *src;       /* NUL-terminated */
        size_t len;
        const MergeFacts *facts;
        char ns[GROUP_NS_BYTES];      /* "__kvg1a2b3c4d_3" */
} GroupMember;

/* One question of the probe program: the lines whose diagnostics answer it. */
typedef struct GroupProbe {
        size_t member;
        unsigned macro_line;   /* #warning under #ifdef N: N is a macro */
        unsigned using_line;   /* using ::N; (0 for a macro) */
        unsigned alias_line;   /* namespace x = ::N; (0 for a macro) */
        unsigned std_line;     /* using ::std::N; (0 unless the member has `using namespace std;`) */
} GroupProbe;

void group_member_ns(GroupMember *m, uint64_t tag, size_t i);
char *group_probe_source(const char *includes, const GroupMember *m, size_t n, GroupProbe **ret_probes,
                         size_t *ret_n);
int group_probe_read(const char *log, const GroupProbe *p, size_t n_probes, bool *present, size_t n_members);
char *group_merged_source(const char *includes, const GroupMember *m, size_t n, uint64_t tag);
int group_split_log(const char *raw, const GroupMember *m, size_t n, char **member_raw, bool *has_error);
char *group_unname(const char *text, const GroupMember *m);
