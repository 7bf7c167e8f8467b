# The set-up the device scripts share (sourced, from the repository root): the carried wheels into a
# site folder, the CUDA libraries of pip's nvidia-* packages, and the carried minimal LAMMPS.
#
#   source benchmarks/device_env.sh
#   install_wheels /tmp/x_site x_device.sh "OpenMM" .whl/peers/openmm*.whl
#   add_pip_nvidia_libs
#   unpack_lammps /tmp/lammps_min x_device.sh        # sets LENV (env ... to run lmp and its mpiexec)
#   run NAME CAP COMMAND...                          # a run under the script's BUDGET (from $start)

# install_wheels SITE SCRIPT WHAT WHEEL...: the wheels into SITE, appended to PYTHONPATH; a line naming
# SCRIPT and WHAT when there are none or the install fails (the runs needing them then record errors).
install_wheels() {
    local site=$1 script=$2 what=$3; shift 3
    local whls=()
    for w in "$@"; do [ -f "$w" ] && whls+=("$w"); done
    if [ ${#whls[@]} -eq 0 ]; then
        echo "$script: no $what wheels in .whl/peers (carry .whl)"
        return 0
    fi
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "${whls[@]}" \
        && export PYTHONPATH=$PYTHONPATH:$site || echo "$script: $what wheel install failed"
}

# add_pip_nvidia_libs: the CUDA libraries of the pip 'nvidia-*' packages appended (not prepended) to
# LD_LIBRARY_PATH, in case OpenMM's CUDA plugin does not find libnvrtc / libcufft by itself.
add_pip_nvidia_libs() {
    local sp extra
    sp=$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)
    if [ -n "$sp" ] && [ -d "$sp/nvidia" ]; then
        extra=$(find "$sp/nvidia" -name 'lib*.so*' -printf '%h\n' 2>/dev/null | sort -u | paste -sd: -)
        [ -n "$extra" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$extra"
    fi
    return 0
}

# unpack_lammps LROOT SCRIPT: the carried .whl/lammps/lammps-min.tar.xz (benchmarks/peers/pack_lammps.py)
# into LROOT, with an lmp wrapper and MPICH's launcher; LENV: the env command that puts them, and MPICH's
# libmpi.so.12, first (LAMMPS only: the image's Open MPI is not MPICH's ABI).
unpack_lammps() {
    local lroot=$1 script=$2
    mkdir -p "$lroot"
    if [ -f .whl/lammps/lammps-min.tar.xz ] && tar -xJf .whl/lammps/lammps-min.tar.xz -C "$lroot"; then
        printf '#!/bin/sh\nexec %s/lammps/lmp "$@"\n' "$lroot" > "$lroot/bin/lmp"   # lmp's RPATH is $ORIGIN
        chmod +x "$lroot/bin/lmp"
        ln -sf mpiexec.hydra "$lroot/bin/mpiexec"     # hydra finds hydra_pmi_proxy beside it
    else
        echo "$script: no .whl/lammps/lammps-min.tar.xz (carry .whl; see benchmarks/peers/pack_lammps.py)"
    fi
    LENV=(env "PATH=$lroot/bin:$PATH" "LD_LIBRARY_PATH=$lroot/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
}

# run NAME CAP COMMAND...: COMMAND under the script's budget (BUDGET seconds from its $start) and at most
# CAP seconds, its output in $OUT/NAME.log; prints one line (the exit, the time, the log's last line).
# Skipped, with exit 3 and that line in the log, when less than 30 s would be left.
run() {
    local name=$1 cap=$2; shift 2
    local left=$(( BUDGET - (SECONDS - start) )) t0=$SECONDS rc
    local t=$(( left < cap ? left : cap ))
    if (( t < 30 )); then
        echo "$name: skipped ($left s of the $BUDGET s budget left)" | tee "$OUT/$name.log"
        return 3
    fi
    timeout -k 10 "$t" "$@" > "$OUT/$name.log" 2>&1; rc=$?
    echo "$name: exit $rc after $(( SECONDS - t0 )) s (limit $t s, $(( SECONDS - start )) s in): $(grep -v '^\s*$' "$OUT/$name.log" | tail -n 1 | cut -c1-200)"
    return $rc
}
