"""Machine files by path or by the name of one bundled with the package: the TOML ones read by
simulation/machine.py, the Dimemas .cfg ones by simulation/dimemas_config.py."""

from __future__ import annotations

from pathlib import Path

from tareador.errors import MachineError
from tareador.simulation.dimemas_config import parse_cfg
from tareador.simulation.machine import Machine, parse_toml, read_text

BUNDLED = Path(__file__).resolve().parents[1] / "machines"


def bundled_machines() -> list[str]:
    """The names ``--machine`` takes for the machine files shipped with the package."""
    return sorted(p.stem for p in BUNDLED.iterdir()
                  if p.suffix == ".toml" or (p.suffix == ".cfg" and p.read_text().startswith("#DIMEMAS_CONFIGURATION")))


def machine_path(name: str | Path) -> Path:
    """A machine file by path, or a bundled one by bare name (``laptop``, ``cluster``): a pip
    install has no examples/ directory, and a path is what users of Dimemas already write."""
    path = Path(name)
    if path.exists() or len(path.parts) > 1 or path.suffix:
        return path
    for suffix in (".toml", ".cfg"):
        if (BUNDLED / f"{name}{suffix}").exists():
            return BUNDLED / f"{name}{suffix}"
    raise MachineError(f"no machine file {name} and no bundled machine of that name; bundled: "
                       f"{', '.join(bundled_machines())}")


def load_machine(path: str | Path) -> Machine:
    """The machine of a file given by path or by bundled name (MachineError if unusable)."""
    path = machine_path(path)
    text = read_text(path, "machine file")
    if text.lstrip().startswith("#DIMEMAS_CONFIGURATION"):
        return parse_cfg(text, path)
    return parse_toml(text, path)
