"""The workflow of docs/workflow.md: build, minimise, equilibrate, produce with analyses (writes
thermo.csv, traj.gsd, rdf.csv, msd.csv, vacf.csv, sq.csv in the current folder); plot with
``pycumd plot *.csv``."""

from pycumd import (CRescale, LennardJones, NoseHoover, Simulation, ThermoReporter, VelocityVerlet,
                    create_velocities, lattice_system)
from pycumd.minimize import MinimizeSettings, Minimizer
from pycumd.outputs.analysis import MSDReporter, RDFReporter, StructureFactorReporter, VACFReporter
from pycumd.outputs.trajectory import trajectory_writer

# 1. build: 2,048 atoms on an fcc lattice at the liquid's density, hot velocities
system = lattice_system("fcc", 8, density=0.8442)
create_velocities(system, temperature=3.0, seed=2026)
lj = LennardJones(r_cut=2.5).pair_coeff(0, 0, epsilon=1.0, sigma=1.0)
sim = Simulation(system, lj, VelocityVerlet(dt=0.005, thermostat=NoseHoover(1.0, damping=0.5)))
sim.run(500)                                                   # melt, then cool to T = 1 (NVT)

# 2. minimise the quenched liquid (an inherent structure), LAMMPS' FIRE
result = Minimizer(sim, MinimizeSettings(etol=1e-8, ftol=1e-8, maxiter=2000, maxeval=20000, style="fire")).run()
print(result.describe())

# 3. equilibrate at T = 1.5 and P = 2.5 from the minimum: new velocities (FIRE leaves them near zero),
#    Nose-Hoover thermostat with stochastic cell rescaling (NPT)
relaxed = sim.system()
create_velocities(relaxed, temperature=1.5, seed=7)
equil = Simulation(relaxed, lj, VelocityVerlet(dt=0.005, thermostat=NoseHoover(1.5, damping=0.5),
                                               barostat=CRescale(pressure=2.5, tau_p=0.5, compressibility=0.1,
                                                                 seed=11)))
equil.run(2000)
print(f"NPT: density {equil.state.n_atoms / equil.box.volume:.4f} after 2000 steps")

# 4. produce (NVE) with thermo, a trajectory and the four analyses
prod = Simulation(equil.system(), lj, VelocityVerlet(dt=0.005))
prod.reporters += [ThermoReporter(every=50, log="thermo.csv", screen=False),
                   trajectory_writer("traj.gsd", 100),
                   RDFReporter("rdf.csv", every=50, r_max=4.0, bins=160),
                   MSDReporter("msd.csv", every=20, window=100),
                   VACFReporter("vacf.csv", every=2, window=100),
                   StructureFactorReporter("sq.csv", every=100, q_max=12.0, bins=60)]
prod.run(4000)
prod.close()
