"""Named reasons a candidate is rejected or marked, each with a one-line rationale.

A flag's value is what appears in ``VerifyResult.flags`` and in reports. Each static check and runtime
check has a fixture kernel in ``tests/verify/fixtures/`` that trips it.
"""

from __future__ import annotations

from enum import Enum


class Flag(str, Enum):
    # format
    NO_CODE = "no_code"
    # static checks (tritonrl.verify.static)
    SYNTAX_ERROR = "syntax_error"
    NO_MODELNEW = "no_modelnew"
    NO_TRITON_KERNEL = "no_triton_kernel"
    TRY_EXCEPT_FALLBACK = "try_except_fallback"
    REFERENCE_REUSE = "reference_reuse"
    TORCH_COMPUTE = "torch_compute"
    TAMPERING = "tampering"
    THREADS = "threads"
    PROCESS_EXIT = "process_exit"
    FORBIDDEN_IMPORT = "forbidden_import"
    TORCH_COMPILE = "torch_compile"
    FILE_ACCESS = "file_access"
    # load / run
    IMPORT_ERROR = "import_error"
    INIT_ERROR = "init_error"
    RUNTIME_ERROR = "runtime_error"
    TIMEOUT = "timeout"
    CRASH = "crash"
    # runtime checks (tritonrl.verify.child.monitor, judged in tritonrl.verify.judge)
    NO_TRITON_LAUNCH = "no_triton_launch"
    INPUT_MUTATION = "input_mutation"
    NOT_PLAIN_TENSOR = "not_plain_tensor"
    SHAPE_MISMATCH = "shape_mismatch"
    DTYPE_MISMATCH = "dtype_mismatch"
    DEVICE_MISMATCH = "device_mismatch"
    OUTPUT_MISMATCH = "output_mismatch"
    NONFINITE_OUTPUT = "nonfinite_output"
    DEGENERATE_OUTPUT = "degenerate_output"
    TINY_MISMATCH = "tiny_mismatch"
    OUTPUT_ALIASES_INPUT = "output_aliases_input"
    OUTPUT_NOT_WRITTEN = "output_not_written"
    DATA_RACE = "data_race"
    CROSS_CHECK_UNFINISHED = "cross_check_unfinished"
    INTERPRETER_ONLY = "interpreter_only"
    SANDBOX_VIOLATION = "sandbox_violation"
    # the task or the machine, not the candidate
    REFERENCE_ERROR = "reference_error"
    VERIFIER_ERROR = "verifier_error"
    CPU_UNSUPPORTED = "cpu_unsupported"
    REDUCED_SHAPES = "reduced_shapes"
    CPU_SIZE_LIMIT = "cpu_size_limit"
    DECLINED = "declined"
    SANDBOX_UNAVAILABLE = "sandbox_unavailable"
    SANDBOX_INCOMPLETE = "sandbox_incomplete"
    # timing
    SUSPICIOUS_SPEEDUP = "suspicious_speedup"
    TIMING_UNAVAILABLE = "timing_unavailable"
    TIMING_MISMATCH = "timing_mismatch"
    TIMING_UNTRUSTED = "timing_untrusted"
    TIMING_UNRESOLVED = "timing_unresolved"


RATIONALE: dict[Flag, str] = {
    Flag.NO_CODE: "No Python code defining ModelNew could be found in the completion.",
    Flag.SYNTAX_ERROR: "The code does not parse as Python.",
    Flag.NO_MODELNEW: "The answer must define class ModelNew.",
    Flag.NO_TRITON_KERNEL: "The answer must define at least one @triton.jit kernel.",
    Flag.TRY_EXCEPT_FALLBACK: "A try/except around kernel launches lets a broken kernel fall back to PyTorch.",
    Flag.REFERENCE_REUSE: "Inheriting from, building or looking up the reference Model computes the answer with it.",
    Flag.TORCH_COMPUTE: "High-level torch compute in the forward path does the work instead of Triton (strict mode).",
    Flag.TAMPERING: "Assigning to torch/triton/numpy attributes or sys.modules can fool the harness.",
    Flag.THREADS: "Threads, side processes, other CUDA streams and CUDA graphs run work outside the timed or checked window.",
    Flag.PROCESS_EXIT: "Exiting the process (os._exit, sys.exit) can skip the checks.",
    Flag.FORBIDDEN_IMPORT: "Modules for processes, sockets, introspection of the harness have no place in a kernel.",
    Flag.TORCH_COMPILE: "torch.compile / Inductor / TorchScript generate the kernels; the answer must write them.",
    Flag.FILE_ACCESS: "Reading or writing files (open, numpy/torch save/load, os/pathlib file calls) can reach the harness's data.",
    Flag.IMPORT_ERROR: "The module raised while being imported (or Triton failed to compile it).",
    Flag.INIT_ERROR: "ModelNew(*get_init_inputs()) raised.",
    Flag.RUNTIME_ERROR: "The forward pass raised.",
    Flag.TIMEOUT: "The candidate did not finish within the time limit.",
    Flag.CRASH: "The candidate's process died (segfault, os._exit, out of memory).",
    Flag.NO_TRITON_LAUNCH: "A forward pass must launch at least one Triton kernel.",
    Flag.INPUT_MUTATION: "The inputs must be unchanged after the forward pass.",
    Flag.NOT_PLAIN_TENSOR: "Outputs must be plain torch.Tensor, not subclasses or other objects.",
    Flag.SHAPE_MISMATCH: "Output shapes must equal the reference's.",
    Flag.DTYPE_MISMATCH: "Output dtypes must equal the reference's (no silent precision downgrade).",
    Flag.DEVICE_MISMATCH: "Outputs must be on the same device as the reference's.",
    Flag.OUTPUT_MISMATCH: "Outputs differ from the reference beyond the tolerance.",
    Flag.NONFINITE_OUTPUT: "Outputs have NaN or Inf where the reference has none.",
    Flag.DEGENERATE_OUTPUT: "Constant or all-zero output where the reference varies (output-scale guard).",
    Flag.TINY_MISMATCH: "Outputs differ from the reference on the tiny shape variant.",
    Flag.OUTPUT_ALIASES_INPUT: "An output sharing memory with an input (a view such as x.t()) was not computed by a kernel.",
    Flag.OUTPUT_NOT_WRITTEN: "Every output must be computed by a Triton kernel launched in that forward pass, not copied from torch's, numpy's or earlier data.",
    Flag.DATA_RACE: "Programs of one launch shared memory without atomics: on a GPU they run at once, and the result depends on timing.",
    Flag.CROSS_CHECK_UNFINISHED: "The CPU cross-check of a GPU verdict could not finish (a construct the interpreter cannot run, a time-out there): the races and stray reads a GPU run cannot show were never looked for (verify.cross_check_unfinished).",
    Flag.INTERPRETER_ONLY: "A kernel the GPU compiler rejects (a plain Python function, numpy, a tensor's host handle), or a launch a GPU refuses at its own shape (a grid or block over the limits): only the CPU interpreter would run it.",
    Flag.SANDBOX_VIOLATION: "The candidate tried what its sandbox forbids (starting a process, loading native code, reading its own memory); the operating system refused.",
    Flag.SANDBOX_UNAVAILABLE: "Not judged: a protection of the candidate's sandbox could not be applied on this machine (strict mode); also verifier_error.",
    Flag.SANDBOX_INCOMPLETE: "Judged without every protection of the sandbox (best-effort mode); timing['sandbox'] says which were missing (informational).",
    Flag.REFERENCE_ERROR: "The task's reference Model failed (the task's fault, not the candidate's).",
    Flag.VERIFIER_ERROR: "The verifier itself failed on this item (a bug, or the machine: disk, memory); logged with its traceback.",
    Flag.CPU_UNSUPPORTED: "Triton's CPU interpreter cannot run this construct; judge it on a GPU (not counted as wrong).",
    Flag.REDUCED_SHAPES: "Judged at shapes reduced to fit the CPU budget (informational).",
    Flag.CPU_SIZE_LIMIT: "The trial's shapes are too large for the CPU interpreter within the limits.",
    Flag.DECLINED: "Not judged: the task cannot be judged within this device's budget (the reason in `declined`); neither correct nor wrong.",
    Flag.SUSPICIOUS_SPEEDUP: "A speedup above the threshold is more likely a harness hole than a kernel.",
    Flag.TIMING_UNAVAILABLE: "No GPU: runtimes are not measured (reported as null, never faked).",
    Flag.TIMING_MISMATCH: "Outputs of timed calls (each on fresh inputs) differ from the reference, or a timed call ran torch compute: the timed work was not the checked work.",
    Flag.TIMING_UNTRUSTED: "The candidate's clock disagrees with the judge's wall clock: its runtime earns no speed credit.",
    Flag.TIMING_UNRESOLVED: "The candidate's or the reference's runtime is below what the timer resolves once its own cost is taken off: no speedup, no speed credit.",
}

# What the CPU interpreter's memory checks say (``tritonrl.verify.child.bounds``) when a kernel reads memory nothing
# wrote, or touches memory outside every tensor of its launch: a GPU run shows neither (a GPU reads what the memory
# happens to hold, and its allocator's slack past a tensor). With ``data_race``, the evidence the CPU cross-check of
# a GPU verdict takes (``tritonrl.verify.parent.cross_check``).
UNSET_READ = "memory nothing had written"
OUTSIDE_LAUNCH = "outside every tensor handed to its launch"
