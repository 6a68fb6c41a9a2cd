/*
 * Unit tests for the compile-option allowlist (common/options.c): every
 * documented form passes, and every family that names a file, enables
 * relocatable device code or picks the architecture is refused with a
 * reason that says why.
 */
#include <stdio.h>
#include <string.h>

#include "common/limits.h"
#include "common/options.h"
#include "common/testcheck.h"

static void allowed(const char *opt)
{
        char msg[256] = "";
        int r = options_check(opt, msg, sizeof(msg));
        if (r != 0) {
                fprintf(stderr, "expected '%s' to be allowed: %s\n", opt, msg);
                failures++;
        }
}

/* Refused, and the reason contains @why. */
static void refused(const char *opt, const char *why)
{
        char msg[256] = "";
        int r = options_check(opt, msg, sizeof(msg));
        if (r != OPTIONS_E_FORBIDDEN) {
                fprintf(stderr, "expected '%s' to be refused (got %d)\n", opt, r);
                failures++;
        } else if (!strstr(msg, why)) {
                fprintf(stderr, "'%s': reason \"%s\" lacks \"%s\"\n", opt, msg, why);
                failures++;
        }
}

int main(void)
{
        static const char *const ok[] = {
                "-use_fast_math", "--use_fast_math", "-ftz=true", "-ftz=false", "--ftz=true",
                "-prec-div=false", "--prec-div=true", "-prec-sqrt=true", "--prec-sqrt=false",
                "-fmad=false", "--fmad=true", "-lineinfo", "--generate-line-info",
                "-maxrregcount=16", "-maxrregcount=64", "--maxrregcount=255", "-std=c++11",
                "-std=c++14", "-std=c++17", "-std=c++20", "--std=c++17", "-DFOO", "-DFOO=1",
                "-DBLOCK_SIZE=256", "-DSCALE=1.5f", "-DEXPR=(1+2)*3", "-DT=float",
                "--define-macro=BAR=2", "-UFOO", "--undefine-macro=FOO",
                "--extra-device-vectorization", "-extra-device-vectorization", "-restrict",
                "--restrict", "-default-device", "--device-as-default-execution-space", "-dopt=on",
                "-O0", "-O1", "-O2", "-O3", "--ptxas-options=-O3", "-Xptxas=-O1",
        };
        char big[LIMIT_OPTION_BYTES + 8];

        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
                allowed(ok[i]);

        /* Files and paths. */
        refused("-I/etc", "include path");
        refused("-I.", "include path");
        refused("--include-path=/tmp", "include path");
        refused("--pre-include=/etc/passwd", "names a file");
        refused("-include", "names a file");
        refused("--create-pch=/tmp/x.pch", "writes a file");
        refused("--pch-dir=/tmp", "names a path");
        refused("--use-pch=/tmp/x", "reads a file");
        refused("-pch", "precompiled");
        refused("--time=/tmp/t.csv", "writes a file");
        refused("--fdevice-time-trace=/tmp/t.json", "writes a file");
        refused("-o", "output");
        /* Relocatable device code. */
        refused("-rdc=true", "relocatable device code");
        refused("--relocatable-device-code=true", "relocatable device code");
        refused("-dc", "relocatable device code");
        refused("-dlto", "link-time");
        refused("--dlink-time-opt", "link-time");
        /* The architecture. */
        refused("-arch=sm_80", "architecture");
        refused("--gpu-architecture=compute_90", "architecture");
        refused("-gencode=arch=compute_90,code=sm_90", "architecture");
        /* ptxas: only the optimisation level. */
        refused("--ptxas-options=-v", "ptxas");
        refused("-Xptxas=--warn-on-spills", "ptxas");
        refused("--ptxas-options=-O3,-v", "ptxas");
        /* Values. */
        refused("-maxrregcount=15", "16..255");
        refused("-maxrregcount=256", "16..255");
        refused("-maxrregcount=", "16..255");
        refused("-maxrregcount=3x", "16..255");
        refused("-maxrregcount=0064", "16..255");
        refused("-std=c++03", "c++11");
        refused("-std=gnu++17", "c++11");
        refused("-ftz=yes", "true or false");
        refused("-dopt=off", "-dopt=on");
        refused("-O4", "-O0..-O3");
        refused("-Ofast", "-O0..-O3");
        /* Macros. */
        refused("-D", "no macro name");
        refused("-D=1", "no macro name");
        refused("-D1X", "must match");
        refused("-DA-B", "must match");
        refused("-D__CUDA_ARCH__=900", "reserved");
        refused("-D__THRUST_HOST_SYSTEM_TAG_HEADER=x", "reserved");
        refused("-D_Foo", "reserved");
        refused("-DX=\"/etc/passwd\"", "macro values");
        refused("-DX=</etc/passwd>", "macro values");
        refused("-DX=a/b", "macro values");
        refused("-DX=#", "macro values");
        refused("-UX=1", "-U takes a macro name only");
        refused("-U__FILE__", "reserved");
        /* Everything else. */
        refused("-G", "not on the allowlist");
        refused("-w", "not on the allowlist");
        refused("--device-debug", "not on the allowlist");
        refused("", "empty");
        refused("-DX\n#include </etc/passwd>", "control");
        refused("-D\xc3\xa9", "non-ASCII");
        memset(big, 'A', sizeof(big) - 1);
        big[0] = '-';
        big[1] = 'D';
        big[sizeof(big) - 1] = '\0';
        refused(big, "longer than");
        CHECK(options_check("-I/etc", NULL, 0) == OPTIONS_E_FORBIDDEN);
        CHECK(options_check(NULL, NULL, 0) == OPTIONS_E_FORBIDDEN);

        if (failures)
                fprintf(stderr, "test-options: %d failure(s)\n", failures);
        return failures ? 1 : 0;
}
