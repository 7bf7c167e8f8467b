"""Every CUDA source of the package compiles with nvcc for sm_80 and sm_90 (no GPU needed)."""

import shutil
import subprocess
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "pycumd"
SOURCES = sorted(PACKAGE.rglob("*.cu"))
NVCC = shutil.which("nvcc")
#: sources with a composite-precision part (#if COMPOSITE), compiled again with its defines
COMPOSITE_SOURCES = [p for p in SOURCES if "#if COMPOSITE" in p.read_text()]
COMPOSITE_DEFINES = ["-DCOMPOSITE=1", "-Dreal_t=float", "-Dpair_t=float", "-Daccum_t=float"]
#: sources with a part for mixed precision's fixed-point forces (or its sums in pair_sums.cuh),
#: compiled again with mixed's defines
FIXED_POINT_SOURCES = [p for p in SOURCES if "#if FIXED_POINT_FORCES" in p.read_text()
                       or "pair_sums.cuh" in p.read_text()]


def test_sources_found():
    assert SOURCES, f"no .cu files under {PACKAGE}"


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_compiles(source, arch, tmp_path):
    _compile(source, arch, tmp_path, [])


def test_composite_sources_found():
    names = {p.name for p in COMPOSITE_SOURCES}
    assert {"forces.cu", "integrate.cu", "verlet.cu"} <= names


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("source", COMPOSITE_SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_compiles_composite(source, arch, tmp_path):
    _compile(source, arch, tmp_path, COMPOSITE_DEFINES)


def _compile(source, arch, tmp_path, defines):
    cmd = [NVCC, "-std=c++17", f"-arch={arch}", "--cubin", f"-I{source.parent}",
           f"-I{PACKAGE}", *defines, "-o", str(tmp_path / "kernel.cubin"), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 0, f"{' '.join(cmd)}\n{proc.stdout}\n{proc.stderr}"
    assert (tmp_path / "kernel.cubin").stat().st_size > 0


#: sources with the batched engine's kernels (#if BATCH: pycumd.batch_engine), compiled again with -DBATCH=1
#: in the precisions the batched engine runs on the GPU (double, single)
BATCH_SOURCES = [p for p in SOURCES if "#if BATCH" in p.read_text()]
BATCH_DEFINES = {"double": ["-DBATCH=1"],
                 "single": ["-DBATCH=1", "-Dreal_t=float", "-Dpair_t=float", "-Daccum_t=float"]}


def test_batch_sources_found():
    assert {"forces.cu", "integrate.cu", "verlet.cu", "step_control.cu"} <= {p.name for p in BATCH_SOURCES}


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch, precision", [("sm_80", "double"), ("sm_90", "double"), ("sm_90", "single"),
                                             pytest.param("sm_80", "single", marks=pytest.mark.ci_only)])
@pytest.mark.parametrize("source", BATCH_SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_compiles_batched(source, precision, arch, tmp_path):
    _compile(source, arch, tmp_path, BATCH_DEFINES[precision])


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("precision", ["double", "single"])
def test_compiles_target_zones(precision, tmp_path):
    """forces.cu's zone kernel (#if TARGET_ZONES: a spatial domain's interior forces while the ghosts
    travel, pycumd.parallel.domains.DomainForces) in the precisions it runs in."""
    _compile(PACKAGE / "forces.cu", "sm_90", tmp_path, ["-DTARGET_ZONES=1", *BATCH_DEFINES[precision][1:]])


@pytest.mark.ci_only
@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("macro, source", [("BATCH", "forces.cu"), ("BATCH", "integrators/integrate.cu"),
                                           ("BATCH", "neighbors/verlet.cu"), ("BATCH", "step_control.cu"),
                                           ("TARGET_ZONES", "forces.cu")])
def test_batch_define_leaves_the_single_kernels_alone(macro, source, tmp_path):
    """The batched kernels sit in #if BATCH blocks (and the zone kernel in #if TARGET_ZONES): without
    the define (0, as pycumd compiles the single-system kernels) the PTX has no such entry and equals
    the PTX of the source with those blocks cut out, so the single-system kernels are the same PTX as
    before the block was added."""
    import re

    path = PACKAGE / source
    text = path.read_text()
    cut = re.sub(rf"#ifndef {macro}\n#define {macro} 0\n#endif\n#if {macro}\n.*?\n#endif // {macro}\n", "", text,
                 flags=re.S)
    assert cut != text and f"#if {macro}" not in cut
    (tmp_path / "cut.cu").write_text(cut)
    ptx = []
    for name, src in (("with", path), ("without", tmp_path / "cut.cu")):
        out = tmp_path / f"{name}.ptx"
        cmd = [NVCC, "-std=c++17", "-arch=sm_80", "--ptx", f"-I{path.parent}", f"-I{PACKAGE}", "-o", str(out), str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        ptx.append(out.read_text())
    assert {"BATCH": "_batch", "TARGET_ZONES": "_zone"}[macro] not in ptx[0] and ptx[0] == ptx[1]


#: the CUDA-graph step's Langevin kernel (integrate.cu's #if LANGEVIN_CAPTURED block, compiled with -DLANGEVIN_CAPTURED=1
#: by Langevin.prepare_capture) in the state types of double, single and mixed precision
LANGEVIN_CAPTURED_DEFINES = {"double": [], "single": ["-Dreal_t=float", "-Daccum_t=float"],
                             "mixed": ["-Dreal_t=double", "-Daccum_t=double", "-Dat_build_t=float"]}


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
@pytest.mark.parametrize("precision", sorted(LANGEVIN_CAPTURED_DEFINES))
def test_captured_langevin_compiles(precision, arch, tmp_path):
    _compile(PACKAGE / "integrators" / "integrate.cu", arch, tmp_path,
             LANGEVIN_CAPTURED_DEFINES[precision] + ["-DLANGEVIN_CAPTURED=1"])


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
def test_captured_langevin_define_leaves_the_other_kernels_alone(tmp_path):
    """The captured Langevin kernel sits in an #if LANGEVIN_CAPTURED block: without the define (as the
    integrator and the host-driven Langevin compile integrate.cu) the PTX has no captured entry and equals the
    PTX of the source with the block cut out; with it, the entry is there."""
    import re

    path = PACKAGE / "integrators" / "integrate.cu"
    text = path.read_text()
    cut = re.sub(r"#ifndef LANGEVIN_CAPTURED\n#define LANGEVIN_CAPTURED 0\n#endif\n#if LANGEVIN_CAPTURED\n.*?"
                 r"\n#endif // LANGEVIN_CAPTURED\n", "", text, flags=re.S)
    assert cut != text and "LANGEVIN_CAPTURED" not in cut
    (tmp_path / "cut.cu").write_text(cut)
    ptx = []
    for name, src, defines in (("with", path, []), ("without", tmp_path / "cut.cu", []),
                               ("captured", path, ["-DLANGEVIN_CAPTURED=1"])):
        out = tmp_path / f"{name}.ptx"
        cmd = [NVCC, "-std=c++17", "-arch=sm_80", "--ptx", f"-I{path.parent}", f"-I{PACKAGE}", *defines, "-o", str(out),
               str(src)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        ptx.append(out.read_text())
    assert "langevin_forces_captured" not in ptx[0] and ptx[0] == ptx[1]
    assert ".entry langevin_forces_captured(" in ptx[2]


def test_fixed_point_sources_found():
    assert {"forces.cu", "allpairs.cu"} <= {p.name for p in FIXED_POINT_SOURCES}


#: the variant compiles below: sm_90 by default, sm_80 too in CI (test_compiles covers both for every source)
VARIANT_ARCHS = [pytest.param("sm_80", marks=pytest.mark.ci_only), "sm_90"]


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", VARIANT_ARCHS)
@pytest.mark.parametrize("source, sums_fp64", [
    pytest.param(source, fp64, id=f"{source.relative_to(PACKAGE)}-{'float64' if fp64 else 'compensated'}-sums",
                 marks=[pytest.mark.ci_only] if fp64 and source.name == "allpairs.cu" else [])   # 9 s: in CI
    for source in FIXED_POINT_SOURCES for fp64 in (0, 1)])
def test_compiles_mixed(source, arch, tmp_path, sums_fp64):
    """With the defines mixed precision compiles it with (pycumd.precision; the force sums in
    float64 on GPUs with fast float64, else compensated in float32: forces.pair_kernel)."""
    from pycumd.precision import get_precision
    defines = [f"-D{k}={v}" for k, v in get_precision("mixed", "cuda").cuda_defines.items()]
    _compile(source, arch, tmp_path, defines + [f"-DFIXED_POINT_SUMS_FP64={sums_fp64}"])


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("arch", VARIANT_ARCHS)
@pytest.mark.parametrize("source, precision", [
    (source, precision) if source == "forces.cu" or precision == "double"
    else pytest.param(source, precision, marks=pytest.mark.ci_only)     # 9 s each: allpairs' other three in CI
    for source in ("forces.cu", "neighbors/allpairs.cu") for precision in ("single", "double", "mixed", "composite")])
def test_compiles_with_the_table_potential(source, precision, arch, tmp_path):
    """The force kernels with pair_style table's header (its atomic record of a pair below the
    inner distance, on float and double rows), with the defines pycumd compiles them with."""
    import numpy as np

    from pycumd.forces import potential_defines
    from pycumd.potentials.table import Table
    from pycumd.precision import get_precision

    r = np.linspace(0.9, 2.5, 50)
    table = Table("linear", 100).pair_values(0, 0, r, 4 * (r ** -12 - r ** -6), 24 * (2 * r ** -13 - r ** -7))
    defines = {**get_precision(precision, "cuda").cuda_defines, **potential_defines(table)}
    _compile(PACKAGE / source, arch, tmp_path, [f"-D{k}={v}" for k, v in defines.items()])


#: eam.cu's types in each precision (its default compile above is double with 8-column tables)
EAM_PRECISION_DEFINES = {"single": ["-Dreal_t=float", "-Dpair_t=float", "-Daccum_t=float"],
                         "mixed": ["-Dreal_t=double", "-Dpair_t=float", "-Daccum_t=double"],
                         "double": []}


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("variant", ["-DEAM_TABLE_COLUMNS=8", "-DEAM_TABLE_COLUMNS=7", "-DEAM_FP_ROWS=1"])
@pytest.mark.parametrize("precision", list(EAM_PRECISION_DEFINES))
def test_eam_compiles_in_each_precision_and_variant(precision, variant, tmp_path):
    """Both layouts of the tables' rows (EAM_TABLE_COLUMNS: pycumd.eam_forces.table_columns) and the
    kernels with pass 1's F'(rho) rows (EAM_FP_ROWS: pycumd.eam_forces.fp_rows_option)."""
    _compile(PACKAGE / "eam.cu", "sm_90", tmp_path, EAM_PRECISION_DEFINES[precision] + [variant])


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
def test_eam_refuses_another_table_layout(tmp_path):
    cmd = [NVCC, "-std=c++17", "-arch=sm_90", "--cubin", f"-I{PACKAGE}", "-DEAM_TABLE_COLUMNS=9", "-o",
           str(tmp_path / "kernel.cubin"), str(PACKAGE / "eam.cu")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode != 0 and "EAM_TABLE_COLUMNS must be 7" in proc.stderr


#: the bonded styles' device functions, each compiled into molecular/bonded.cu for its kind
BONDED_STYLE_HEADERS = sorted(PACKAGE.glob("molecular/styles/*.cuh"))
BONDED_KINDS = {"bond": 0, "angle": 1, "dihedral": 2, "improper": 3}


def test_bonded_style_headers_found():
    assert len(BONDED_STYLE_HEADERS) >= 14


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("header", BONDED_STYLE_HEADERS, ids=lambda p: p.stem)
def test_bonded_styles_compile(header, tmp_path):
    """Each style in its kind's term kernel (sm_80; bonded.cu itself compiles for both architectures above);
    bonds and dihedrals with single precision's state types, the others with double's."""
    kind = BONDED_KINDS[header.stem.split("_")[0]]
    real = "float" if kind in (0, 2) else "double"
    _compile(PACKAGE / "molecular" / "bonded.cu", "sm_80", tmp_path,
             [f"-DTERM_KIND={kind}", f'-DSTYLE_HEADER="{header.relative_to(PACKAGE)}"', f"-Dreal_t={real}",
              f"-Daccum_t={real}"])


@pytest.mark.skipif(NVCC is None, reason="nvcc not on PATH")
def test_special_pair_kernel_compiles(tmp_path):
    """molecular/bonded.cu's scaled special pairs (TERM_KIND 4: the pair potential through pair_sums.cuh), with
    mixed precision's float pair arithmetic."""
    _compile(PACKAGE / "molecular" / "bonded.cu", "sm_80", tmp_path, ["-DTERM_KIND=4", "-Dpair_t=float"])
