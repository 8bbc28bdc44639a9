"""Finding and loading the GPU shared libraries: cuDNN 9, cuBLASLt, CUPTI, the driver, NVML.

Order of search, so that the pip wheels that PyTorch and friends install are used first:
1. an explicit path in an environment variable (SEER_CUDNN_LIB, SEER_CUBLASLT_LIB, SEER_CUPTI_LIB);
2. the NVIDIA pip wheels: `nvidia.cudnn` (a namespace package, so
   `importlib.util.find_spec("nvidia.cudnn").submodule_search_locations[0]`) + lib/libcudnn.so.9;
   cuBLAS for CUDA 13 in nvidia/cu13/lib/libcublasLt.so.13, for CUDA 12 in
   nvidia/cublas/lib/libcublasLt.so.12; CUPTI in nvidia/cu13/lib/libcupti.so.13 or
   nvidia/cuda_cupti/lib/libcupti.so.12 (layouts read from the wheels nvidia-cudnn-cu13 9.28.0.42,
   nvidia-cublas 13.10.0.20 and nvidia-cuda-cupti 13.5.25);
3. the system: LD_LIBRARY_PATH, CUDA_HOME/CUDA_PATH, /usr/local/cuda, then ctypes.util.find_library.

libcudnn.so.9 is a shim that dlopens libcudnn_graph/ops/cnn.so.9 on first use and *aborts the
process* when one is missing (seen on CPU with the shim alone: "Invalid handle. Cannot load
symbol cudnnGetVersion", then SIGABRT). So the sub-libraries are checked, and loaded first,
before the shim is touched: a missing one is a one-sentence error, not a core dump.

cuDNN's engines also dlopen libcublasLt and NVRTC (libnvrtc + libnvrtc-builtins, for the
runtime-compiled engines) by soname at run time. The wheels put those in nvidia/cu13/lib (or
nvidia/cublas/lib, nvidia/cuda_nvrtc/lib for CUDA 12), which cuDNN's RUNPATH ($ORIGIN) does
not reach, so without help those engines fail. `preload_runtime_deps` loads them RTLD_GLOBAL
by full path before any cuDNN library: the dynamic loader then answers cuDNN's dlopen by
soname with the copy already loaded. `loaded()` gives the resolved paths for device.json.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import glob
import importlib.util
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from .errors import LibraryNotFound, NoGPUError

CUDNN_SUBLIBS = ("libcudnn_graph.so.9", "libcudnn_ops.so.9", "libcudnn_cnn.so.9")
RUNTIME_DEPS = ("cublaslt", "nvrtc", "nvrtc_builtins")  # what cuDNN dlopens itself


def _wheel_dirs(package: str) -> list[Path]:
    """Folders of an installed (namespace) package such as nvidia.cudnn; [] if absent."""
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        return []
    if spec is None or not spec.submodule_search_locations:
        return []
    return [Path(p) for p in spec.submodule_search_locations]


def _system_dirs() -> list[Path]:
    dirs = [Path(p) for p in os.environ.get("LD_LIBRARY_PATH", "").split(":") if p]
    for var in ("CUDA_HOME", "CUDA_PATH", "CUDNN_PATH"):
        if os.environ.get(var):
            root = Path(os.environ[var])
            dirs += [root / "lib64", root / "lib", root / "extras" / "CUPTI" / "lib64"]
    dirs += [
        Path("/usr/local/cuda/lib64"),
        Path("/usr/local/cuda/extras/CUPTI/lib64"),
        Path("/usr/lib/x86_64-linux-gnu"),
        Path("/usr/lib64"),
        Path("/usr/lib"),
    ]
    return dirs


def _expand(path: str) -> list[str]:
    """A path, or where it holds a '*' the files it matches (newest version last)."""
    return sorted(glob.glob(path)) if "*" in path else [path]


@dataclass(frozen=True)
class Candidate:
    """One place a library may be: a full path, or a bare soname for the dynamic loader."""

    path: str
    origin: str  # "env", "wheel", "system", "loader"


def candidates(kind: str) -> list[Candidate]:
    """Where to look for a library kind (cudnn, cublaslt, cupti, nvtx, nvrtc, nvrtc_builtins),
    in search order."""
    out: list[Candidate] = []
    env = {
        "cudnn": "SEER_CUDNN_LIB",
        "cublaslt": "SEER_CUBLASLT_LIB",
        "cupti": "SEER_CUPTI_LIB",
        "nvrtc": "SEER_NVRTC_LIB",
    }.get(kind)
    if env and os.environ.get(env):
        out.append(Candidate(os.environ[env], "env"))
    wheel: list[tuple[str, str]] = {
        "cudnn": [("nvidia.cudnn", "lib/libcudnn.so.9")],
        "cublaslt": [("nvidia.cu13", "lib/libcublasLt.so.13"), ("nvidia.cublas", "lib/libcublasLt.so.12")],
        "cupti": [("nvidia.cu13", "lib/libcupti.so.13"), ("nvidia.cuda_cupti", "lib/libcupti.so.12")],
        "nvtx": [("nvidia.nvtx", "lib/libnvToolsExt.so.1"), ("nvidia.cu13", "lib/libnvToolsExt.so.1")],
        "nvrtc": [("nvidia.cu13", "lib/libnvrtc.so.13"), ("nvidia.cuda_nvrtc", "lib/libnvrtc.so.12")],
        # the builtins' soname carries major.minor (libnvrtc-builtins.so.13.0): globbed below
        "nvrtc_builtins": [
            ("nvidia.cu13", "lib/libnvrtc-builtins.so.*"),
            ("nvidia.cuda_nvrtc", "lib/libnvrtc-builtins.so.*"),
        ],
    }[kind]
    for pkg, rel in wheel:
        for d in _wheel_dirs(pkg):
            out += [Candidate(p, "wheel") for p in _expand(str(d / rel))]
    names = {
        "cudnn": ["libcudnn.so.9"],
        "cublaslt": ["libcublasLt.so.13", "libcublasLt.so.12"],
        "cupti": ["libcupti.so.13", "libcupti.so.12", "libcupti.so"],
        "nvtx": ["libnvToolsExt.so.1"],
        "nvrtc": ["libnvrtc.so.13", "libnvrtc.so.12"],
        "nvrtc_builtins": ["libnvrtc-builtins.so.*"],
    }[kind]
    for d in _system_dirs():
        for n in names:
            out += [Candidate(p, "system") for p in _expand(str(d / n))]
    for n in names:
        if "*" not in n:
            out.append(Candidate(n, "loader"))
    short = {
        "cudnn": "cudnn",
        "cublaslt": "cublasLt",
        "cupti": "cupti",
        "nvtx": "nvToolsExt",
        "nvrtc": "nvrtc",
        "nvrtc_builtins": "nvrtc-builtins",
    }[kind]
    found = ctypes.util.find_library(short)
    if found:
        out.append(Candidate(found, "loader"))
    seen, uniq = set(), []
    for c in out:
        if c.path not in seen:
            seen.add(c.path)
            uniq.append(c)
    return uniq


def bind(lib, signatures: dict) -> None:
    """Give a loaded library's functions their ctypes signatures (a test fake is left alone)."""
    if not isinstance(lib, ctypes.CDLL):
        return
    for name, (res, args) in signatures.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            continue
        fn.restype, fn.argtypes = res, args


def _is_path(p: str) -> bool:
    return "/" in p


def _load(path: str, mode: int = ctypes.RTLD_GLOBAL) -> ctypes.CDLL:
    return ctypes.CDLL(path, mode=mode)


def find(kind: str) -> Candidate | None:
    """The first candidate that exists on disk (full paths) or that the loader can open."""
    for c in candidates(kind):
        if _is_path(c.path):
            if Path(c.path).is_file():
                return c
            continue
        try:
            _load(c.path)
            return c
        except OSError:
            continue
    return None


_LOADED: dict[str, tuple[ctypes.CDLL, str]] = {}


def preload_runtime_deps() -> dict[str, str]:
    """Load what cuDNN dlopens at run time (cuBLASLt, NVRTC and its builtins), RTLD_GLOBAL, by
    full path; returns kind -> path of those found. A missing one is no error here: only the
    engines that need it fail, and device.json says which were not found."""
    out = {}
    for kind in RUNTIME_DEPS:
        if _try_load(kind, []) is not None:
            out[kind] = _LOADED[kind][1]
    return out


def _try_load(kind: str, errors: list[str]) -> tuple[ctypes.CDLL, str] | None:
    """The first candidate of `kind` that loads (kept in _LOADED), or None; why the others
    failed goes into `errors`."""
    if kind in _LOADED:
        return _LOADED[kind]
    for c in candidates(kind):
        if _is_path(c.path) and not Path(c.path).is_file():
            continue
        try:
            _LOADED[kind] = (_load(c.path), c.path)
            return _LOADED[kind]
        except OSError as exc:
            errors.append(str(exc))
    return None


def resolved(path: str) -> str:
    """The file a loaded library came from: a full path as it is, a bare soname looked up in
    /proc/self/maps (what the dynamic loader actually mapped)."""
    if _is_path(path):
        return str(Path(path).resolve())
    try:
        with open("/proc/self/maps") as fh:
            for line in fh:
                f = line.split()[-1] if line.strip() else ""
                if f.startswith("/") and Path(f).name.startswith(path):
                    return f
    except OSError:
        pass
    return path


def loaded() -> dict[str, str]:
    """kind -> resolved path of every library loaded so far (for device.json)."""
    return {kind: resolved(path) for kind, (_, path) in sorted(_LOADED.items())}


def load_cudnn() -> tuple[ctypes.CDLL, str]:
    """Load libcudnn.so.9 after what it dlopens at run time and after its sub-libraries;
    returns (library, where it came from)."""
    if "cudnn" in _LOADED:
        return _LOADED["cudnn"]
    preload_runtime_deps()
    errors = []
    for c in candidates("cudnn"):
        if _is_path(c.path):
            p = Path(c.path)
            if not p.is_file():
                continue
            missing = [s for s in CUDNN_SUBLIBS if not (p.parent / s).is_file()]
            if missing:
                errors.append(f"{p.parent} lacks {', '.join(missing)}")
                continue
            subs = [str(p.parent / s) for s in CUDNN_SUBLIBS]
        else:
            subs = list(CUDNN_SUBLIBS)
        try:
            for s in subs:  # graph first: ops and cnn need it
                _load(s)
            lib = _load(c.path)
        except OSError as exc:
            errors.append(str(exc))
            continue
        _LOADED["cudnn"] = (lib, c.path)
        return _LOADED["cudnn"]
    why = f" ({'; '.join(errors[:2])})" if errors else ""
    raise LibraryNotFound(
        "cuDNN 9 was not found: install the wheel nvidia-cudnn-cu12 or nvidia-cudnn-cu13 "
        f"(pip), or point SEER_CUDNN_LIB at libcudnn.so.9{why}"
    )


def _load_kind(kind: str, what: str, hint: str) -> tuple[ctypes.CDLL, str]:
    errors: list[str] = []
    found = _try_load(kind, errors)
    if found is not None:
        return found
    why = f" ({errors[0]})" if errors else ""
    raise LibraryNotFound(f"{what} was not found: {hint}{why}")


def load_cublaslt() -> tuple[ctypes.CDLL, str]:
    return _load_kind(
        "cublaslt",
        "cuBLASLt",
        "install the wheel nvidia-cublas (CUDA 13) or "
        "nvidia-cublas-cu12, or point SEER_CUBLASLT_LIB at libcublasLt.so.*",
    )


def load_cupti() -> tuple[ctypes.CDLL, str]:
    return _load_kind(
        "cupti",
        "CUPTI",
        "install the wheel nvidia-cuda-cupti (CUDA 13) or "
        "nvidia-cuda-cupti-cu12, or point SEER_CUPTI_LIB at libcupti.so.*",
    )


def load_driver() -> ctypes.CDLL:
    """The CUDA driver library; its absence means there is no NVIDIA GPU driver here."""
    if "cuda" in _LOADED:
        return _LOADED["cuda"][0]
    try:
        lib = _load("libcuda.so.1")
    except OSError:
        raise NoGPUError(
            "no NVIDIA GPU driver on this machine (libcuda.so.1 cannot be loaded), "
            "so there is nothing to measure; run the collection on a machine "
            "with a CUDA GPU"
        ) from None
    _LOADED["cuda"] = (lib, "libcuda.so.1")
    return lib


def load_nvml() -> ctypes.CDLL | None:
    """NVML (ships with the driver) for the SM clock and the driver version; None if absent."""
    try:
        return _load("libnvidia-ml.so.1")
    except OSError:
        return None


def ncu_path() -> str | None:
    """The Nsight Compute CLI: $NCU, PATH, then the usual install folders."""
    if os.environ.get("NCU") and Path(os.environ["NCU"]).is_file():
        return os.environ["NCU"]
    found = shutil.which("ncu")
    if found:
        return found
    for pattern in (
        "/opt/nvidia/nsight-compute/*/ncu",
        "/usr/local/cuda/bin/ncu",
        "/usr/local/cuda*/nsight-compute*/ncu",
    ):
        hits = sorted(glob.glob(pattern))
        if hits:
            return hits[-1]
    return None


def describe() -> dict[str, str]:
    """Where each library would come from (for `python -m cudnn_bench info`); loads nothing."""
    out = {}
    for kind in ("cudnn", "cublaslt", "nvrtc", "nvrtc_builtins", "cupti", "nvtx"):
        c = (
            find(kind)
            if kind != "cudnn"
            else next((c for c in candidates("cudnn") if _is_path(c.path) and Path(c.path).is_file()), None)
        )
        out[kind] = f"{c.path} ({c.origin})" if c else "not found"
    out["ncu"] = ncu_path() or "not found"
    return out


# ---------------------------------------------------------------- versions, checked at run time
# The versions whose headers the ctypes bindings were checked against (structs, enums; see
# cudnn.py, cublaslt.py, cupti.py). The GPU image may hold others (e.g. cuDNN 9.19, cuBLAS
# 13.1): within cuDNN 9 and cuBLASLt 12/13 the legacy structs are stable, so another minor
# version is a note in device.json, another major an error.
CHECKED_AGAINST = {"cudnn": "9.28.0", "cublaslt": "13.10.0", "cupti": "13.5.25"}
SUPPORTED_MAJORS = {"cudnn": (9,), "cublaslt": (12, 13)}


def nvrtc_version() -> str:
    """'13.0' from nvrtcVersion of the preloaded NVRTC; '' when none is loaded."""
    if "nvrtc" not in _LOADED:
        return ""
    major, minor = ctypes.c_int(0), ctypes.c_int(0)
    try:
        fn = _LOADED["nvrtc"][0].nvrtcVersion
        if int(fn(ctypes.byref(major), ctypes.byref(minor))) != 0:
            return ""
    except (AttributeError, OSError):
        return ""
    return f"{major.value}.{minor.value}"


def _major(version: str) -> int | None:
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return None


def version_notes(versions: dict[str, str]) -> list[str]:
    """Check the versions found at run time; returns notes for device.json and raises
    LibraryNotFound (one sentence) for a major version the bindings do not speak.

    versions: cudnn, cublaslt, nvrtc, cuda (the CUDA version cuDNN was built for), any may be ''.
    """
    notes = []
    for kind, majors in SUPPORTED_MAJORS.items():
        v = versions.get(kind, "")
        if v and _major(v) not in majors:
            raise LibraryNotFound(
                f"{kind} {v} was found, but the harness speaks {kind} "
                f"{' or '.join(map(str, majors))}.x; point SEER_{kind.upper()}_LIB at one"
            )
        if v and v != CHECKED_AGAINST[kind]:
            notes.append(
                f"{kind} {v} runs; the bindings were checked against the headers of "
                f"{CHECKED_AGAINST[kind]} (same major version: the structs and enums used agree)"
            )
    cuda = _major(versions.get("cuda", ""))
    for kind in ("cublaslt", "nvrtc"):
        m = _major(versions.get(kind, ""))
        if cuda is not None and m is not None and m != cuda:
            notes.append(
                f"cuDNN was built for CUDA {cuda} but {kind} {versions[kind]} was loaded: "
                "engines that need it may fail (install the CUDA "
                f"{cuda} wheel of {kind})"
            )
    if versions.get("cudnn") and not versions.get("nvrtc"):
        notes.append(
            "NVRTC was not found: cuDNN's runtime-compiled engines cannot run "
            "(install nvidia-cuda-nvrtc for cuDNN's CUDA version)"
        )
    return notes
