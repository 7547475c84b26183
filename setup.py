"""conf/ stays at the repository top level and ships inside the package as fedcluster/conf, so a
wheel or `pip install .` finds its configs from any directory (fedcluster.command.cli.config_dir). The rest
of the build is declared in pyproject.toml."""
import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildWithConf(build_py):
    def run(self):
        super().run()
        target = Path(self.build_lib) / "fedcluster" / "conf"
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(Path(__file__).resolve().parent / "conf", target)


setup(cmdclass={"build_py": BuildWithConf})
