"""
kevald_torch - the PyTorch worker of kevald (`kevald-torch --role build|run`).

It judges KernelBench-format submissions (a Python file with `class
ModelNew(nn.Module)`) against a task's eager `Model`, speaking the child
protocol of the other workers (docs/internals.md, "Child protocol" and
"Torch worker"). The modules, one concept each:

  frames        the frame format (common/frame.h) and its limits
  loop          the frame loop: HELLO first, a RESULT per JOB, exit statuses
  confine       libkevald-confine.so through ctypes: the sandbox, the watchdog,
                every frame write
  main          start-up of both roles, in their fixed order
  build         the build role: import the ModelNew file so that load_inline
                builds below the job's build_dir
  jobspec       the run JOB, checked and bounded (no torch)
  seeds         per-shape, per-trial seeds from the job's secret seed
  stats         timing statistics and the adaptive stopping rule (no torch)
  cudaerr       torch's CUDA error texts -> CUDA_ERROR_* names (no torch)
  result        the RESULT's parts, shaped as kevald-gpu's (no torch)
  judge         the run role's job flow (torch)
  judge_check   inputs, outputs, comparison (torch)
  judge_timing  the timing phase (torch)

Everything that does not need torch imports without it, so that CI without
PyTorch or a GPU tests it (worker/torch/tests).
"""
