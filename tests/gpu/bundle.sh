#!/bin/bash
# Gather what the GPU suite and the timing benchmark need into one folder
# that can be copied to the GPU host (which cannot run meson on our build
# folders): the worker (and kevald, kevald-compile when built), the prebuilt
# fatbins, the runner, tasks, cases, bench/timing, and the shared libraries
# the GPU host lacks.
#   usage: tests/gpu/bundle.sh BUILD_DIR OUT_DIR
# On the GPU host:  OUT_DIR/run-gpu-suite.sh [-v] [--only CASE]...
#                   OUT_DIR/run-timing-bench.sh
set -euo pipefail
build=$(cd "$1" && pwd)
out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib" "$out/fatbin" "$out/tests/gpu" "$out/bench/timing"
cp "$build/worker/kevald-gpu" "$out/bin/"
for b in server/kevald worker/kevald-compile; do
        [ -x "$build/$b" ] && cp "$build/$b" "$out/bin/"
done
cp "$build"/tests/gpu/*.fatbin "$out/fatbin/"
cp -r "$src/tests/gpu/run_suite.py" "$src/tests/gpu/cases.json" "$src/tests/gpu/exploits.json" \
        "$src/tests/gpu/cases" "$src/tests/gpu/tasks" \
        "$out/tests/gpu/"
cp "$src"/bench/timing/*.py "$src"/bench/timing/*.cu "$out/bench/timing/" 2>/dev/null || true
[ -d "$build/bench/timing" ] && cp "$build"/bench/timing/*.fatbin "$out/fatbin/" 2>/dev/null || true
# Libraries the GPU image (Ubuntu 24.04) lacks; glibc, CUDA and the common
# ones are there (see /work/shared/gpu/README.md).
skip='^(linux-vdso|ld-linux|libc\.so|libm\.so|libdl\.so|libpthread\.so|librt\.so|libcuda\.so|libnvrtc|libnvJitLink|libcublas|libcudart|libgcc_s|libstdc\+\+)'
for bin in "$out"/bin/*; do
        ldd "$bin" | awk '$3 ~ /^\// {print $1, $3}' | while read -r name path; do
                [[ $name =~ $skip ]] && continue
                cp -Lu "$path" "$out/lib/$name"
        done
done
cat > "$out/run-gpu-suite.sh" <<'SH'
#!/bin/bash
# The GPU suite against the bundled kevald-gpu (direct mode). Extra
# arguments go to run_suite.py (-v, --only CASE, --out FILE, --no-sandbox).
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec python3 tests/gpu/run_suite.py --gpu-bin bin/kevald-gpu --fatbins fatbin "$@"
SH
cat > "$out/run-timing-bench.sh" <<'SH'
#!/bin/bash
# Timing fidelity: kevald-gpu against torch/cupy on the same fatbin.
cd "$(dirname "$0")"
export LD_LIBRARY_PATH=$PWD/lib:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
exec python3 bench/timing/fidelity.py --gpu-bin bin/kevald-gpu --fatbins fatbin "$@"
SH
chmod +x "$out/run-gpu-suite.sh" "$out/run-timing-bench.sh"
du -sh "$out"
