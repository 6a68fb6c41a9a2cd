"""Why a reference stays slower than 1.25x the faster of PyTorch eager and
torch.compile at its default shape on the H100 (issue 25; docs/tasks.md,
"Yardsticks"): `provenance.reference_slower_note` of each such task, written
into the task JSON by taskgen.make_task() and l2_gen.make_task2().

The figures are those of docs/tasks.md's yardstick table (reference medians
of tools/oracle/timing.py --ref, session 12, one H100 80GB HBM3;
eager/compile from tasks/baselines/nvidia-h100-80gb-hbm3.json); the buffer
sizes are the task's own scratch counts at its default shape. A task leaves
this table when its reference is rewritten and re-timed within 1.25x.
"""

# name: (reference ms, eager ms, compile ms, what the reference does, why it is slower, what would close it)
_IM2COL = ("im2col writes a column buffer of %s (CI*KH*KW rows by every output position) to global "
           "memory and the cuBLAS SGEMM reads it back")
_COL2IM = ("the cuBLAS SGEMM writes a column buffer of %s (CO*KH*KW rows by every input position, "
           "%s the output) that col2im then gathers")
_CUDNN = "cuDNN forms the same tiles in shared memory (implicit GEMM) and never writes them"
_FIX_CONV = "an implicit-GEMM reference kernel (FP32, no TF32) would close it; not written yet"
_POOL = ("one thread per output with a direct window loop: each input element is loaded %d times "
         "(from L1/L2) and the outputs are written as scalars; torch.compile's generated kernel "
         "streams the row once (%.2fx faster than eager here)")
_FIX_POOL = "a row-tiled kernel (the window's inputs in shared memory, vector loads and stores) would close it; not written yet"

_ROWS = {
    "l1_41_max_pooling_1d": (4.484, 10.64, 2.782, _POOL % (8, 10.64 / 2.782), _FIX_POOL),
    "l1_42_max_pooling_2d": (7.766, 10.74, 4.253, _POOL % (16, 10.74 / 4.253), _FIX_POOL),
    "l1_44_average_pooling_1d": (3.018, 5.414, 1.818, _POOL % (8, 5.414 / 1.818), _FIX_POOL),
    "l1_55_conv_standard_2d_asymmetric_input_square_kernel":
        (23.08, 14.34, 19.39, (_IM2COL % "2.2 GiB per slice, 4 slices of the batch") + "; " + _CUDNN, _FIX_CONV),
    "l1_63_conv_standard_2d_square_input_square_kernel":
        (31.42, 17.3, 33.01, (_IM2COL % "1.1 GiB per slice, 8 slices of the batch") + "; " + _CUDNN, _FIX_CONV),
    "l1_67_conv_standard_1d": (7.431, 5.488, 5.448, (_IM2COL % "3 GiB") + "; " + _CUDNN, _FIX_CONV),
    "l1_76_conv_standard_1d_dilated_strided":
        (25.86, 14.56, 14.45, (_IM2COL % "2 GiB per slice, 4 slices of the batch") + "; " + _CUDNN, _FIX_CONV),
    "l2_1_conv2d_relu_biasadd":
        (11.69, 9.513, 9.24, (_IM2COL % "2.2 GiB per slice, 2 slices of the batch")
         + ", and the ReLU and bias run as an epilogue pass over the output; " + _CUDNN, _FIX_CONV),
    "l1_57_conv_transposed_2d_square_input_square_kernel":
        (49.79, 28.25, 34.79, (_COL2IM % ("2.25 GiB", "1.1x")) + "; " + _CUDNN, _FIX_CONV),
    "l1_65_conv_transposed_2d_square_input_asymmetric_kernel":
        (22.56, 8.198, 9.844, (_COL2IM % ("2.6 GiB", "5.2x")) + "; " + _CUDNN, _FIX_CONV),
    "l1_69_conv_transposed_2d_asymmetric_input_asymmetric_kernel":
        (17.37, 5.348, 7.603, "the transposed convolution in its gather form: im2col of the taps that land "
         "on each output writes a column buffer of 1.9 GiB per slice (4 slices of the batch) that the "
         "SGEMM reads back; at this shape (stride 1, 3x5 taps) cuDNN also has FFT and Winograd "
         "algorithms, which need fewer operations than any GEMM form", "a Winograd reference kernel would close it; not written yet"),
    "l1_72_conv_transposed_3d_asymmetric_input_asymmetric_kernel_strided_padded_grouped":
        (5.552, 2.913, 2.968, (_COL2IM % ("1.4 GiB", "13x")) + " (4 groups of 8 channels: small GEMMs); " + _CUDNN,
         _FIX_CONV),
    "l1_75_conv_transposed_2d_asymmetric_input_asymmetric_kernel_strided_grouped_padded_dilated":
        (11.77, 6.681, 6.793, (_COL2IM % ("1.9 GiB", "2.5x")) + " (4 groups); " + _CUDNN, _FIX_CONV),
    "l1_77_conv_transposed_3d_square_input_square_kernel_padded_dilated_strided":
        (9.589, 5.956, 6.026, (_COL2IM % ("1.7 GiB", "3.2x")) + "; " + _CUDNN, _FIX_CONV),
    "l1_78_conv_transposed_2d_asymmetric_input_asymmetric_kernel_padded":
        (19.46, 11.88, 16.65, (_COL2IM % ("2.6 GiB", "5.2x")) + "; " + _CUDNN, _FIX_CONV),
    "l1_79_conv_transposed_1d_asymmetric_input_square_kernel_padded_strided_dilated":
        (6.278, 2.887, 2.867, (_COL2IM % ("1.5 GiB", "1.5x")) + "; " + _CUDNN, _FIX_CONV),
    "l1_81_conv_transposed_2d_asymmetric_input_square_kernel_dilated_padded_strided":
        (2.751, 1.461, 2.981, (_COL2IM % ("288 MiB", "0.4x")) + ", and with stride 5 most of the "
         "gathered taps are zero-skips; " + _CUDNN, _FIX_CONV),
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
