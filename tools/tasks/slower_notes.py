"""Why a reference stays slower than 1.25x the faster of PyTorch eager and
torch.compile at its default shape on the H100 (issue 25; docs/tasks.md,
"Yardsticks"): `provenance.reference_slower_note` of each such task, written
into the task JSON by taskgen.make_task() and l2_gen.make_task2().

The figures are those of docs/tasks.md's yardstick table (reference medians of
session 17 on one H100 80GB HBM3, through kevald or stand-alone as _ROWS says; l1_81's
of tools/oracle/timing.py --ref, session 12;
eager/compile from tasks/baselines/nvidia-h100-80gb-hbm3.json); the buffer
sizes are the task's own scratch counts at its default shape. A task leaves
this table when its reference is rewritten and re-timed within 1.25x.
"""

# name: (reference ms, eager ms, compile ms, what the reference does, why it is slower, what would close it)
_COL2IM = ("the cuBLAS SGEMM writes a column buffer of %s (CO*KH*KW rows by every input position, "
           "%s the output) that col2im then gathers")
_CUDNN = "cuDNN forms the same tiles in shared memory (implicit GEMM) and never writes them"
# session 17's H100 medians: through kevald (bench/tasks/selfeval.py) for the 64-channel tiles,
# stand-alone (tools/oracle/timing.py --ref) for the 128-channel ones, timed after their last change
_ROWS = {
    "l1_65_conv_transposed_2d_square_input_asymmetric_kernel":
        (11.75, 8.198, 9.844, "the implicit-GEMM kernel (fp32 FMAs, 64 output channels by 128 output "
         "positions per block, the taps gathered as the tile loads: no column buffer) runs this 3x7 "
         "transposed convolution at 31 TFLOP/s, cuDNN's FP32 kernel at 45",
         "a kernel tuned for the 64-channel tile (wider position tiles, or the tensor cores' 3xTF32 "
         "that the 128-channel tile uses) would close it; not written yet"),
    "l1_67_conv_standard_1d":
        (6.848, 5.488, 5.448, "the implicit-GEMM kernel (3xTF32 on the tensor cores, 128 output channels "
         "by 128 positions per block; each k step's three MMAs summed into a fresh fragment and added "
         "in fp32, which keeps it fp32-accurate: chaining them into the accumulator measured 6.47 ms "
         "with 2.5x the error) spills 20 bytes under its 128-register limit; K is only 192, so the "
         "tile's prologue and stores weigh",
         "fitting the 128-channel tensor-core tile in its registers would close it; not written yet"),
    "l1_69_conv_transposed_2d_asymmetric_input_asymmetric_kernel":
        (13.37, 5.348, 7.603, "the implicit-GEMM kernel (3xTF32 on the tensor cores, 128 output channels "
         "by 128 positions per block) does the direct operation count; cuDNN's time is 1.5x below what "
         "the FP32 peak allows for that count, so it uses FFT or Winograd algorithms (stride 1, 3x5 "
         "taps), which need fewer operations than any GEMM form",
         "a Winograd reference kernel would close it; not written yet"),
    "l1_76_conv_standard_1d_dilated_strided":
        (19.50, 14.56, 14.45, "the implicit-GEMM kernel (3xTF32 on the tensor cores, 128 output channels "
         "by 128 positions per block) gathers each tap from the input as the tile loads; with stride 3 "
         "and dilation 4 a warp's gather touches 3x the sectors of a stride-1 row, and the 192-deep k "
         "loop leaves the tile's prologue and stores a large share",
         "staging each block's input span in shared memory once instead of a gather per tap would "
         "close it; not written yet"),
    "l1_79_conv_transposed_1d_asymmetric_input_square_kernel_padded_strided_dilated":
        (4.382, 2.887, 2.867, "the implicit-GEMM kernel runs one stride-1 gather per output phase (stride "
         "2: the even outputs take no tap, the odd ones all three), and a phase's blocks write every "
         "second element of y, so half-written sectors are merged in L2 across blocks",
         "one block writing both phases of a row segment would close it; not written yet"),
    "l1_81_conv_transposed_2d_asymmetric_input_square_kernel_dilated_padded_strided":
        (2.751, 1.461, 2.981, (_COL2IM % ("288 MiB", "0.4x")) + ", and with stride 5 most of the "
         "gathered taps are zero-skips; " + _CUDNN, "the implicit-GEMM form measured slower here (9.31 ms: "
         "25 output phases, 16 of them without a tap, stores 5 apart); a kernel that writes whole rows of "
         "y for every phase would close it; not written yet"),
}

def note(name):
    """The reference_slower_note of task @name, or None when it meets 1.25x."""
    row = _ROWS.get(name)
    if row is None:
        return None
    ref, eager, comp, what, fix = row
    best = min(eager, comp)
    return ("H100, 2026-11-27: reference %.4g ms against %.4g ms (%s), %.2fx. The reference: %s. %s." %
            (ref, best, "torch eager" if eager <= comp else "torch.compile", ref / best, what, fix[0].upper() + fix[1:]))


NAMES = sorted(_ROWS)
