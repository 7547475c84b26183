"""Where a finished run's files are read from: its own folder, or a pack of archived runs (report/packs.py).

The reports, `load_runs` and the seal check read a run's files through one of these, so a run archived in a pack
is read exactly as its folder was: the same names (`metrics.csv`, `.hydra/overrides.yaml`), the same bytes."""
import hashlib
from pathlib import Path
from typing import Dict, List


class FolderFiles:
    """The files of a run folder on disk."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def is_file(self, name: str) -> bool:
        return (self.path / name).is_file()

    def read_bytes(self, name: str) -> bytes:
        return (self.path / name).read_bytes()

    def read_text(self, name: str) -> str:
        return (self.path / name).read_text()

    def names(self) -> List[str]:
        try:
            return sorted(p.name for p in self.path.iterdir())
        except OSError:
            return []

    def sha256(self, name: str) -> str:
        h = hashlib.sha256()
        with open(self.path / name, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        return h.hexdigest()


class PackedFiles:
    """The files of one run held in a pack: {name: text}, each text the file's UTF-8 bytes decoded."""

    def __init__(self, files: Dict[str, str]):
        self.files = files

    def is_file(self, name: str) -> bool:
        return name in self.files

    def read_bytes(self, name: str) -> bytes:
        if name not in self.files:
            raise FileNotFoundError(name)
        return self.files[name].encode("utf-8")

    def read_text(self, name: str) -> str:
        return self.read_bytes(name).decode("utf-8")

    def names(self) -> List[str]:
        return sorted(n for n in self.files if "/" not in n)

    def sha256(self, name: str) -> str:
        return hashlib.sha256(self.read_bytes(name)).hexdigest()
