"""Trace synthesis: the Dimemas traces tareador builds from a traced run, authentic (what ran)
and artificial (the potential task-parallel run, the MPI/OmpSs run, the chunk-overlapped MPI
run). The files' layout itself is ``tareador.formats``; replaying them is ``tareador.simulation``."""
