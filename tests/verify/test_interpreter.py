"""CPU-interpreter compatibility (``tritonrl.verify.child.interpreter``): honest GPU-written kernels run, wrong ones
stay wrong, and what cannot run is classified ``cpu_unsupported`` (and nothing else is).

The shims patch triton/torch module state, so candidates run in one subprocess per mode (as in the harness's
child: shims first, then the candidate is imported from a file and its forward called on CPU tensors).
"""

import importlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch
import triton
import triton.language

from tritonrl.verify.child.interpreter import InterpreterUnsupported, classify_interpreter_error

SRC = str(Path(__file__).resolve().parents[2] / "src")
HEADER = "import torch\nimport torch.nn as nn\nimport triton\nimport triton.language as tl\n"

# Each case: ModelNew, get_calls() -> list of input lists (one forward per item), reference(*inputs).
RELU_KERNEL = """
@triton.jit
def relu_k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, BODY, mask=m)
"""
RELU_TAIL = """
def get_calls(): return [[torch.randn(1000)], [torch.randn(333)]]
def reference(x): return torch.relu(x)
"""


def relu_case(body: str, forward: str, prelude: str = "") -> str:
    method = textwrap.indent(forward + "\nreturn y", " " * 8)
    return (HEADER + prelude + RELU_KERNEL.replace("BODY", body)
            + "\nclass ModelNew(nn.Module):\n    def forward(self, x):\n" + method + "\n" + RELU_TAIL)


LAUNCH = """y = torch.empty_like(x)
n = x.numel()
relu_k[(triton.cdiv(n, 128),)](x, y, n, BLOCK=128)"""
RIGHT, WRONG = "tl.maximum(x, 0.0)", "tl.maximum(x, 0.1)"

AUTOTUNE = HEADER + """
@triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=2, num_stages=2),
                          triton.Config({"BLOCK": 128}, num_warps=4, num_stages=3)], key=["n"])
@triton.jit
def relu_k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, BODY, mask=m)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        relu_k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
        return y
""" + RELU_TAIL

ATOMIC_SUM = HEADER + """
def zero_out(nargs):
    nargs["out_ptr"].zero_()

@triton.autotune(configs=[triton.Config({"BLOCK": 64}, pre_hook=PREHOOK), triton.Config({"BLOCK": 256}, pre_hook=PREHOOK)],
                 key=["n"], reset_to_zero=["out_ptr"])
@triton.jit
def sum_k(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, REDUCE(x, axis=0))

class ModelNew(nn.Module):
    def forward(self, x):
        out = torch.zeros(1, dtype=x.dtype)
        n = x.numel()
        sum_k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, out, n)
        return out

def get_calls(): return [[torch.randn(1000)], [torch.randn(300)]]
def reference(x): return x.sum().reshape(1)
"""

# Issue 51 (the sixteenth red team): a config that skips work (the last block), sixth in the list or with key=[]
AUTOTUNE_SIX = HEADER + """
@triton.autotune(configs=[triton.Config({"BLOCK": b, "DROP": False}) for b in (64, 128, 256, 32, 512)]
                 + [triton.Config({"BLOCK": 128, "DROP": True})], key=[KEY])
@triton.jit
def relu_k(x_ptr, y_ptr, n, BLOCK: tl.constexpr, DROP: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    end = (n // BLOCK) * BLOCK if DROP else n
    m = offs < end
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=m)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.zeros_like(x)
        n = x.numel()
        relu_k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
        return y
""" + RELU_TAIL.replace("KEY", "")

# The seventeenth red team: with key=[] the configs were compared only in the one tuning round (the first shape);
# the SINGLE config is right only while one block covers the input (the first call: 50 values, the second: 300)
AUTOTUNE_ONE_BLOCK = HEADER + """
@triton.autotune(configs=[triton.Config({"BLOCK": 64, "SINGLE": False}), triton.Config({"BLOCK": 64, "SINGLE": True})],
                 key=[])
@triton.jit
def relu_k(x_ptr, y_ptr, n, BLOCK: tl.constexpr, SINGLE: tl.constexpr):
    if SINGLE and tl.program_id(0) > 0:
        return
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.maximum(tl.load(x_ptr + offs, mask=m), 0.0), mask=m)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        n = x.numel()
        relu_k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](x, y, n)
        return y

def get_calls(): return [[torch.randn(50)], [torch.randn(300)]]
def reference(x): return torch.relu(x)
"""

IN_PLACE = HEADER + """
@triton.autotune(configs=[triton.Config({"BLOCK": 64}), triton.Config({"BLOCK": 256})], key=["n"]RESTORE)
@triton.jit
def double_k(x_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(x_ptr + offs, 2.0 * tl.load(x_ptr + offs, mask=m), mask=m)

class ModelNew(nn.Module):
    def forward(self, x):
        y = x.clone()
        n = y.numel()
        double_k[lambda meta: (triton.cdiv(n, meta["BLOCK"]),)](y, n)
        return y

def get_calls(): return [[torch.randn(1000)], [torch.randn(300)]]
def reference(x): return 2.0 * x
"""

# Issue 51: a tuning round skips a config a GPU would refuse for its shared memory (256x256x64 fp32 tiles, three
# stages: 262,144 bytes on sm_90), as Triton's benchmark does on a GPU; the first round meets it first.
AUTOTUNE_GEMM = HEADER + """
@triton.autotune(configs=[triton.Config({"BM": 256, "BN": 256, "BK": 64}, num_warps=8, num_stages=3),
                          triton.Config({"BM": 32, "BN": 32, "BK": 32}, num_warps=4, num_stages=SMALL_STAGES)],
                 key=["M"])
@triton.jit
def mm_k(a_ptr, b_ptr, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    rm = tl.program_id(0) * BM + tl.arange(0, BM)
    rn = tl.program_id(1) * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k0 in range(0, K, BK):
        kk = k0 + rk
        a = tl.load(a_ptr + rm[:, None] * K + kk[None, :], mask=(rm[:, None] < M) & (kk[None, :] < K), other=0.0)
        b = tl.load(b_ptr + kk[:, None] * N + rn[None, :], mask=(kk[:, None] < K) & (rn[None, :] < N), other=0.0)
        acc += tl.dot(a, b, input_precision="ieee")
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc, mask=(rm[:, None] < M) & (rn[None, :] < N))

class ModelNew(nn.Module):
    def forward(self, a, b):
        M, K = a.shape
        N = b.shape[1]
        c = torch.empty((M, N), dtype=a.dtype)
        mm_k[lambda meta: (triton.cdiv(M, meta["BM"]), triton.cdiv(N, meta["BN"]))](a, b, c, M, N, K)
        return c

def get_calls(): return [[torch.randn(48, 64), torch.randn(64, 40)], [torch.randn(40, 64), torch.randn(64, 40)]]
def reference(a, b): return a @ b
"""

HEURISTICS = HEADER + """
@triton.heuristics({"BLOCK": lambda args: triton.next_power_of_2(args["n_cols"])})
@triton.jit
def softmax_k(x_ptr, y_ptr, n_cols, stride, BLOCK: tl.constexpr, SHIFT: tl.constexpr = 0.0):
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK)
    m = cols < n_cols
    x = tl.load(x_ptr + row * stride + cols, mask=m, other=-float("inf"))
    e = tl.math.exp(x - tl.max(x, axis=0))
    tl.store(y_ptr + row * stride + cols, e / tl.sum(e, axis=0) + SHIFT, mask=m)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        softmax_k[(x.shape[0],)](x, y, x.shape[1], x.stride(0)CALL_EXTRA)
        return y

def get_calls(): return [[torch.randn(8, 100)]]
def reference(x): return torch.softmax(x, dim=1)
"""

LIBDEVICE = HEADER + """IMPORT

@triton.jit
def k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(y_ptr + offs, BODY, mask=m)

class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        k[(triton.cdiv(x.numel(), 128),)](x, y, x.numel(), BLOCK=128)
        return y

def get_calls(): return [[torch.randn(1000)]]
def reference(x): return REF
"""


def libdevice_case(imp: str, body: str, ref: str) -> str:
    return LIBDEVICE.replace("IMPORT", imp).replace("BODY", body).replace("REF", ref)


CUDA_LD, EXTRA, FROM_EXTRA = "", "import triton.language.extra.libdevice", "from triton.language.extra import libdevice"
DRIVER_PROPS = """props = triton.runtime.driver.active.utils.get_device_properties(triton.runtime.driver.active.get_current_device())
grid = (min(props["multiprocessor_count"], triton.cdiv(x.numel(), 128)),)
y = torch.empty_like(x)
n = x.numel()
persistent_k[grid](x, y, n, BLOCK=128)"""
PERSISTENT = """
@triton.jit
def persistent_k(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    for start in range(tl.program_id(0) * BLOCK, n, tl.num_programs(0) * BLOCK):
        offs = start + tl.arange(0, BLOCK)
        m = offs < n
        x = tl.load(x_ptr + offs, mask=m)
        tl.store(y_ptr + offs, BODY, mask=m)
"""

# name -> (code, expected): "ok" (honest, runs and matches), "wrong" (runs, mismatches torch),
# "unsupported" (raises, classified cpu_unsupported), "error" (raises, not classified: the candidate's fault)
SCALAR_MASK = relu_case("BODY", LAUNCH).replace("m = offs < n", "m = (offs < n) & (tl.program_id(0) * BLOCK < n)")

CASES = {
    "autotune_multi": (AUTOTUNE.replace("BODY", RIGHT), "ok"),
    # the second config is wrong: every tuning round runs both and compares them (ConfigsDisagree, a wrong answer)
    "autotune_multi_wrong_second_config": (AUTOTUNE.replace("BODY", "tl.where(BLOCK == 128, x, tl.maximum(x, 0.0))"),
                                           "error"),
    # the same with a sixth config wrong, or key=[]: one config per round never reached it (the sixteenth red team)
    "autotune_sixth_config_wrong": (AUTOTUNE_SIX.replace("KEY", '"n"'), "error"),
    "autotune_empty_key_second_config_wrong": (AUTOTUNE_SIX.replace("KEY", ""), "error"),
    "autotune_empty_key_configs_differ_on_a_later_shape": (AUTOTUNE_ONE_BLOCK, "error"),
    # honest: zeros, then only the positive values stored: a later config's runs start from NaN where the first
    # wrote, and leave NaN where nobody writes (the zeros the first left there): that is no disagreement
    "autotune_stores_only_positives_into_zeros": (AUTOTUNE.replace("BODY", "x").replace(
        "tl.store(y_ptr + offs, x, mask=m)", "tl.store(y_ptr + offs, x, mask=m & (x > 0))").replace(
        "y = torch.empty_like(x)", "y = torch.zeros_like(x)"), "ok"),
    # an output accumulated into with no reset_to_zero: a GPU's benchmark runs add up too
    "autotune_accumulates_without_reset": (ATOMIC_SUM.replace("pre_hook=PREHOOK", "").replace(
        ', reset_to_zero=["out_ptr"]', "").replace("REDUCE", "tl.sum"), "error"),
    # in place, with restore_value: each config starts from the same values, and agrees
    "autotune_in_place_restore_value": (IN_PLACE.replace("RESTORE", ', restore_value=["x_ptr"]'), "ok"),
    "autotune_in_place_without_restore": (IN_PLACE.replace("RESTORE", ""), "error"),
    "autotune_reset_prehook": (ATOMIC_SUM.replace("PREHOOK", "zero_out").replace("REDUCE", "tl.sum"), "ok"),
    # wrong (a sum of block maxima), and its configs (blocks of 64 and 256) disagree
    "autotune_reset_prehook_wrong": (ATOMIC_SUM.replace("PREHOOK", "zero_out").replace("REDUCE", "tl.max"), "error"),
    "autotune_reset_only": (ATOMIC_SUM.replace("pre_hook=PREHOOK", "").replace("REDUCE", "tl.sum"), "ok"),
    "heuristics_constexpr_default": (HEURISTICS.replace("CALL_EXTRA", ""), "ok"),
    "heuristics_wrong": (HEURISTICS.replace("CALL_EXTRA", ", SHIFT=0.01"), "wrong"),
    "libdevice_cuda_tanh": (libdevice_case(CUDA_LD, "tl.extra.cuda.libdevice.tanh(x)", "torch.tanh(x)"), "ok"),
    "libdevice_extra_erf": (libdevice_case(EXTRA, "triton.language.extra.libdevice.erf(x)", "torch.erf(x)"), "ok"),
    "libdevice_from_extra_pow": (libdevice_case(FROM_EXTRA, "libdevice.pow(tl.abs(x) + 0.5, 1.7)",
                                                "torch.pow(x.abs() + 0.5, 1.7)"), "ok"),
    "libdevice_from_extra_rsqrt_exp": (libdevice_case(FROM_EXTRA, "libdevice.rsqrt(libdevice.exp(x))",
                                                      "torch.rsqrt(torch.exp(x))"), "ok"),
    "libdevice_gelu_erf": (libdevice_case(FROM_EXTRA, "0.5 * x * (1.0 + libdevice.erf(x * 0.7071067811865476))",
                                          "torch.nn.functional.gelu(x)"), "ok"),
    "libdevice_wrong": (libdevice_case(FROM_EXTRA, "libdevice.tanh(x)", "torch.sigmoid(x)"), "wrong"),
    "libdevice_cuda_wrong": (libdevice_case(CUDA_LD, "tl.extra.cuda.libdevice.exp(x)", "torch.exp2(x)"), "wrong"),
    "libdevice_unmapped": (libdevice_case(FROM_EXTRA, "libdevice.j0(x)", "torch.special.bessel_j0(x)"), "unsupported"),
    "libdevice_rounding_mode": (libdevice_case(CUDA_LD, "tl.extra.cuda.libdevice.sqrt_rz(tl.abs(x))",
                                               "x.abs().sqrt()"), "unsupported"),
    "inline_asm": (libdevice_case(CUDA_LD, 'tl.inline_asm_elementwise("mov.u32 $0, %smid;", "=r,r", [x], '
                                           'dtype=tl.float32, is_pure=True, pack=1)', "x"), "unsupported"),
    "inline_asm_straight_line": (libdevice_case(CUDA_LD, 'tl.inline_asm_elementwise("max.f32 $0, $1, 0f00000000;", '
                                                         '"=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)',
                                                "torch.relu(x)"), "ok"),
    "inline_asm_wrong": (libdevice_case(CUDA_LD, 'tl.inline_asm_elementwise("min.f32 $0, $1, 0f00000000;", '
                                                 '"=r,r", [x], dtype=tl.float32, is_pure=True, pack=1)',
                                        "torch.relu(x)"), "wrong"),
    "tl_math_variants": (libdevice_case(CUDA_LD, "tl.math.exp(tl.math.log(tl.abs(x) + 1.0)) + tl.exp(x) * 0.0 "
                                                 "+ tl.math.rsqrt(tl.abs(x) + 1.0) * 0.0 + tl.sigmoid(x) * 0.0",
                                        "x.abs() + 1.0"), "ok"),
    "driver_active_device": (relu_case(RIGHT, "x = x.to(DEVICE)\n" + LAUNCH,
                                       "DEVICE = triton.runtime.driver.active.get_active_torch_device()\n"), "ok"),
    "driver_active_device_wrong": (relu_case(WRONG, "x = x.to(DEVICE)\n" + LAUNCH,
                                             "DEVICE = triton.runtime.driver.active.get_active_torch_device()\n"),
                                   "wrong"),
    "driver_props_persistent": (relu_case(RIGHT, DRIVER_PROPS, PERSISTENT.replace("BODY", RIGHT)), "ok"),
    "driver_props_persistent_wrong": (relu_case(RIGHT, DRIVER_PROPS, PERSISTENT.replace("BODY", WRONG)), "wrong"),
    "torch_cuda_queries": (relu_case(RIGHT, "dev = torch.cuda.current_device()\n"
                                            "nsm = torch.cuda.get_device_properties(dev).multi_processor_count\n"
                                            "cap = torch.cuda.get_device_capability()\n"
                                            "with torch.cuda.device(x.device):\n"
                                            + textwrap.indent(LAUNCH, "    ") + "\ntorch.cuda.synchronize()"), "ok"),
    "torch_cuda_queries_wrong": (relu_case(WRONG, "dev = torch.cuda.current_device()\n"
                                                  "with torch.cuda.device(x.device):\n"
                                                  + textwrap.indent(LAUNCH, "    ") + "\ntorch.cuda.synchronize()"),
                                 "wrong"),
    "cuda_available_branch": (relu_case(RIGHT, LAUNCH.replace("torch.empty_like(x)", "torch.empty_like(x, device=DEV)"),
                                        'DEV = "cuda" if torch.cuda.is_available() else "cpu"\n'), "ok"),
    # GPU-written code naming its device: under the interpreter that device is the CPU (``_install_cuda_as_cpu``)
    "moves_to_cuda": (relu_case(RIGHT, "x = x.cuda()\n" + LAUNCH), "ok"),
    "moves_to_cuda_wrong": (relu_case(WRONG, "x = x.to('cuda', non_blocking=True)\n" + LAUNCH), "wrong"),
    "output_made_on_cuda": (relu_case(RIGHT, LAUNCH.replace("torch.empty_like(x)",
                                                            "torch.empty(x.shape, device='cuda:0', dtype=x.dtype)")),
                            "ok"),
    "output_made_on_cuda_wrong": (relu_case(WRONG, LAUNCH.replace("torch.empty_like(x)",
                                                                  "x.new_empty(x.shape, device=torch.device('cuda'))")),
                                  "wrong"),
    "cuda_stream": (relu_case(RIGHT, "s = torch.cuda.current_stream()\n" + LAUNCH), "unsupported"),
    "host_index_error": (relu_case(RIGHT, "n0 = x.shape[3]\n" + LAUNCH), "error"),
    "tl_math_tanh_missing": (libdevice_case(CUDA_LD, "tl.math.tanh(x)", "torch.tanh(x)"), "error"),
    "tl_builtin_on_host": (relu_case(RIGHT, "offs = tl.arange(0, 128)\n" + LAUNCH), "error"),
    "autotune_skips_config_over_shared_memory": (AUTOTUNE_GEMM.replace("SMALL_STAGES", "2"), "ok"),
    # every config over the limit: the GPU's launch fails too (interpreter_only)
    "autotune_every_config_over_shared_memory": (AUTOTUNE_GEMM.replace('"BM": 32, "BN": 32, "BK": 32', '"BM": 256, '
                                                                      '"BN": 256, "BK": 128').replace(
                                                                          "SMALL_STAGES", "2"), "error"),
    # a block mask and a scalar condition: the scalar comparison was an int32 handle, the combined mask int32
    "mask_with_scalar_condition": (SCALAR_MASK.replace("BODY", RIGHT), "ok"),
    "mask_with_scalar_condition_wrong": (SCALAR_MASK.replace("BODY", WRONG), "wrong"),
}

RUNNER = r"""
import importlib.util, json, sys, traceback
import torch
shim = sys.argv[1] == "shim"
if shim:
    from tritonrl.verify.child.interpreter import install_interpreter_compat
    print("REPORT " + json.dumps(install_interpreter_compat()), flush=True)
from tritonrl.verify.child.interpreter import classify_interpreter_error
results = {}
for name, path in json.loads(sys.argv[2]).items():
    code = open(path).read()
    statuses, reason = [], None
    try:
        spec = importlib.util.spec_from_file_location("candidate_" + name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        torch.manual_seed(0)
        for inputs in module.get_calls():
            with torch.no_grad():
                out = module.ModelNew()(*inputs)
            ok = torch.allclose(out, module.reference(*inputs), atol=1e-4, rtol=1e-4)
            statuses.append("ok" if ok else "wrong")
        status = "wrong" if "wrong" in statuses else "ok"
    except Exception as exc:
        reason = classify_interpreter_error(exc, code)
        status = "unsupported" if reason else "error"
        reason = reason or f"{type(exc).__name__}: {exc}"[:300]
    results[name] = {"status": status, "calls": statuses, "reason": reason}
print("RESULTS " + json.dumps(results), flush=True)
"""


def run_cases(tmp_path: Path, mode: str, names: list[str]) -> tuple[dict, dict]:
    paths = {}
    for name in names:
        path = tmp_path / f"{mode}_{name}.py"
        path.write_text(CASES[name][0])
        paths[name] = str(path)
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": SRC, "OMP_NUM_THREADS": "1",
           "CUDA_VISIBLE_DEVICES": ""}
    proc = subprocess.run([sys.executable, "-c", RUNNER, mode, json.dumps(paths)], capture_output=True, text=True,
                          env=env, timeout=300, cwd=tmp_path)
    lines = {line.split(" ", 1)[0]: json.loads(line.split(" ", 1)[1]) for line in proc.stdout.splitlines()
             if line.startswith(("REPORT ", "RESULTS "))}
    assert "RESULTS" in lines, proc.stderr[-3000:]
    return lines.get("REPORT", {}), lines["RESULTS"]


@pytest.fixture(scope="module")
def shimmed(tmp_path_factory):
    return run_cases(tmp_path_factory.mktemp("shim"), "shim", list(CASES))


@pytest.mark.parametrize("name", list(CASES))
def test_case_with_shims(shimmed, name):
    report, results = shimmed
    expected = CASES[name][1]
    got = results[name]
    assert got["status"] == expected, (name, got, report)


def test_every_shim_installed(shimmed):
    report, _ = shimmed
    for shim in ("driver", "autotune", "libdevice", "torch_cuda", "scalar_index", "compare_int1", "cuda_as_cpu",
                 "inline_asm"):
        assert report.get(shim, "").startswith("ok"), report


def test_unsupported_reasons_name_the_construct(shimmed):
    _, results = shimmed
    assert "libdevice.j0" in results["libdevice_unmapped"]["reason"]
    assert "libdevice.sqrt_rz" in results["libdevice_rounding_mode"]["reason"]
    assert "inline_asm" in results["inline_asm"]["reason"]
    assert "current_stream" in results["cuda_stream"]["reason"]


def test_every_autotune_config_is_run_and_compared(shimmed):
    """Each new launch runs every config (as a GPU's benchmark does) and compares it with the kept one, so the first
    call already meets the wrong one, whatever its place in the list or the key; the reason names both configs and
    the tensor."""
    _, results = shimmed
    for name in ("autotune_multi_wrong_second_config", "autotune_sixth_config_wrong",
                 "autotune_empty_key_second_config_wrong"):
        assert results[name]["calls"] == [], results[name]
        assert "ConfigsDisagree" in results[name]["reason"] and "`y_ptr`" in results[name]["reason"], results[name]
    assert "run again over what it wrote" in results["autotune_accumulates_without_reset"]["reason"]
    # configs that agree on the first launch's shape, not on the second's: each new launch is compared (key=[])
    assert results["autotune_empty_key_configs_differ_on_a_later_shape"]["calls"] == ["ok"]
    assert results["autotune_multi"]["calls"] == ["ok", "ok"]


BEFORE = ["autotune_multi", "driver_active_device", "driver_props_persistent", "libdevice_cuda_tanh",
          "libdevice_extra_erf", "torch_cuda_queries"]


def test_without_shims_these_fail(tmp_path):
    """The bug being fixed: without the shims these honest kernels do not run under the interpreter."""
    _, results = run_cases(tmp_path, "plain", BEFORE)
    for name in BEFORE:  # and each is at least recognised as cpu_unsupported (the backstop if a shim fails)
        assert results[name]["status"] == "unsupported", (name, results[name])


# ---------------------------------------------------------------------------------- classifier, in-process
def _raise(fn):
    try:
        fn()
    except BaseException as exc:  # noqa: BLE001
        return exc
    raise AssertionError("did not raise")


def _wrapped(fn):
    """As the interpreter reports a kernel's exception: InterpreterError(repr(e)) from e."""
    def outer():
        try:
            fn()
        except Exception as inner:
            raise RuntimeError(repr(inner)) from inner
    return _raise(outer)


def _no_driver():
    from triton.runtime.driver import DriverConfig
    DriverConfig().active  # noqa: B018 - no GPU here: "0 active drivers"


def _interp_builder():
    from triton.runtime.interpreter import InterpreterBuilder
    return InterpreterBuilder()


def _unsupported():
    from tritonrl.verify.child.interpreter import InterpreterDriver
    InterpreterDriver().get_device_interface()


def _forged(exc):
    def fn():
        raise exc
    return fn


@pytest.mark.parametrize("make", [
    lambda: _raise(_unsupported),
    lambda: _wrapped(lambda: _interp_builder().create_extern_elementwise("", "", "__nv_j0f", [], None, True)),
    lambda: _wrapped(lambda: _interp_builder().create_inline_asm("", "", [], None, True, 1)),
    lambda: _raise(_no_driver),
    lambda: _raise(lambda: torch.cuda.current_device()),
    lambda: _raise(lambda: torch.zeros(1).cuda()),
], ids=["shim_unsupported", "extern", "inline_asm", "no_driver", "cuda_current_device", "to_cuda"])
def test_classifier_recognises(make):
    if torch.cuda.is_available():
        pytest.skip("CUDA-missing errors only exist without CUDA")
    assert classify_interpreter_error(make(), "x = 1\n")


@pytest.mark.parametrize("make", [
    lambda: _raise(lambda: (1, 2)[3]),
    lambda: _wrapped(lambda: (1, 2)[3]),
    lambda: _raise(lambda: torch.zeros(10).view(4, 4)),
    lambda: _raise(lambda: importlib.import_module("triton.language.math").tanh),
    lambda: _raise(lambda: triton.language.arange(0, 4)),  # a tl builtin called on the host: wrong on a GPU too
    # a candidate forging the interpreter's messages is judged on its own error
    lambda: _raise(_forged(NotImplementedError("inline_asm not supported in interpreter mode"))),
    lambda: _raise(_forged(RuntimeError("0 active drivers ([]). There should only be one."))),
    lambda: _raise(_forged(AssertionError("Torch not compiled with CUDA enabled"))),
    lambda: _raise(_forged(InterpreterUnsupported("libdevice.tanh"))),
    lambda: _wrapped(_forged(NotImplementedError("extern_elementwise not supported in interpreter mode"))),
], ids=["index", "index_in_kernel", "view_shape", "tl_math_tanh", "builtin_on_host", "forged_inline_asm",
        "forged_driver", "forged_cuda", "forged_shim", "forged_in_kernel"])
def test_classifier_ignores_candidate_faults(make):
    assert classify_interpreter_error(make(), "x = 1\n") is None


def test_a_runtime_scalar_indexes_as_triton_3_9_does_on_triton_3_6(monkeypatch):
    """Triton 3.6's interpreter made ``range(0, K, BLOCK)`` call ``int()`` on K's one-element array, which numpy
    2.4+ refuses: every GEMM reference failed on the GPU hosts' stack. The shim squeezes first, inside the same
    patch scope (undone with it)."""
    import numpy as np
    from triton.runtime import interpreter as interp

    from tritonrl.verify.child.interpreter import _install_scalar_index

    def triton_3_6(tensor, scope):  # what triton 3.6 installs for a kernel's run
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))

    monkeypatch.setattr(interp, "_patch_lang_tensor", triton_3_6)
    scalar = triton.language.core.tensor(interp.TensorHandle(np.array([70], dtype=np.int32), triton.language.int32),
                                         triton.language.int32)
    before = getattr(triton.language.core.tensor, "__index__", None)
    scope = interp._LangPatchScope()
    interp._patch_lang_tensor(triton.language.core.tensor, scope)
    with pytest.raises(TypeError, match="0-dimensional"):
        range(0, scalar, 32)
    scope.restore()
    report = {}
    _install_scalar_index(report)
    assert report["scalar_index"] == "ok"
    scope = interp._LangPatchScope()
    interp._patch_lang_tensor(triton.language.core.tensor, scope)
    assert list(range(0, scalar, 32)) == [0, 32, 64]
    scope.restore()
    assert getattr(triton.language.core.tensor, "__index__", None) is before


def test_the_autotune_comparison_reads_dtypes_numpy_has_not():
    """float8 has no numpy type: its bits are compared exactly, and its NaN is known for what the overwrite left."""
    from tritonrl.verify.child.interpreter import _overwritten, _values

    t = torch.randn(8).to(torch.float8_e4m3fn)
    t[:3] = float("nan")
    label, values = _values(t)
    assert label == "torch.float8_e4m3fn bits" and values.dtype.itemsize == 1
    assert _overwritten(values, values, label).tolist() == [True] * 3 + [False] * 5
    label, values = _values(torch.tensor([1.0, -2.0]).bfloat16())
    assert label == "bfloat16" and values.tolist() == [1.0, -2.0]
