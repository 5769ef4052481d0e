"""Readers and writers of the trace formats HPC tools open (Dimemas, Paraver, Chrome)."""
