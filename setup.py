"""Only what pyproject.toml cannot say: a built package carries the C API (annotations/) and the
Frida agent (tracer_agents/) as tareador/_sources, where tareador/tracing/toolchain.py looks for
them when the package does not sit in a checkout."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ROOT = Path(__file__).resolve().parent


class BuildWithSources(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):  # an editable install finds them in the checkout
            return
        for directory in ("annotations", "tracer_agents"):
            shutil.copytree(ROOT / directory, Path(self.build_lib) / "tareador" / "_sources" / directory,
                            dirs_exist_ok=True)


setup(cmdclass={"build_py": BuildWithSources})
