"""Every CUDA source of the package compiles with nvcc for sm_80 and sm_90 (no GPU needed)."""

import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pycumd"
SOURCES = sorted(PACKAGE.rglob("*.cu"))
NVCC = shutil.which("nvcc")


def test_sources_found():
    assert SOURCES, f"no .cu files under {PACKAGE}"


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_compiles(source, arch, tmp_path):
    cmd = [NVCC, "-std=c++17", f"-arch={arch}", "--cubin", f"-I{source.parent}",
           f"-I{PACKAGE}", "-o", str(tmp_path / "kernel.cubin"), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    assert (tmp_path / "kernel.cubin").stat().st_size > 0
