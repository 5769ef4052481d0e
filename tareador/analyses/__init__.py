"""Numbers derived from traces and simulations: speedups, profiles, what-ifs."""
