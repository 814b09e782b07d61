"""Password references (``env:NAME``, ``file:PATH``), resolved only inside an allow list.

A reference is resolved when a probe runs, never when it is typed. Which ones may be
resolved is the installation's decision, not the user's:

- ``env:NAME`` only when NAME starts with ``CONNWATCH_SECRET_ENV_PREFIX`` (unset: no
  ``env:`` reference resolves) and is none of connwatch's own settings;
- ``file:PATH`` only when PATH, with every symlink resolved, lies inside one of
  ``CONNWATCH_SECRET_FILE_DIRS`` (unset: none resolves), and never the key file or the
  data directory; the file must be a regular file of at most 4 KiB.

A refused reference raises :class:`ReferenceRefused` naming the rule it broke, never the
file's content or whether it exists (the check runs before anything is opened).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from app.config import Settings
from app.secrets.vault import SecretError

REF_PREFIXES = ("env:", "file:")
MAX_SECRET_FILE_BYTES = 4096


class ReferenceRefused(SecretError):
    """A reference the allow lists do not permit; the message names the rule."""


def is_reference(value: str) -> bool:
    return value.startswith(REF_PREFIXES)


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


@dataclass(frozen=True)
class ReferencePolicy:
    """Where references may point (from Settings; see the module docstring)."""

    file_dirs: tuple[Path, ...] = ()
    env_prefix: str = ""
    forbidden: tuple[Path, ...] = ()  # the key file, the data directory
    forbidden_env: frozenset[str] = frozenset()

    @classmethod
    def from_settings(cls, settings: Settings) -> ReferencePolicy:
        return cls(
            file_dirs=tuple(_real(Path(d).expanduser()) for d in settings.secret_file_dirs),
            env_prefix=settings.secret_env_prefix,
            forbidden=(_real(settings.key_file), _real(settings.data_dir)),
            forbidden_env=frozenset(f"CONNWATCH_{n.upper()}" for n in Settings.model_fields),
        )

    def check(self, ref: str) -> None:
        """Raise :class:`ReferenceRefused` unless ``ref`` may be resolved (touches no file)."""
        if ref.startswith("env:"):
            self._check_env(ref[4:])
        elif ref.startswith("file:"):
            self._check_file(ref[5:])
        else:
            raise ReferenceRefused("a reference is env:NAME or file:PATH")

    def _check_env(self, name: str) -> None:
        if not name or "\x00" in name or "=" in name:
            raise ReferenceRefused("env: reference: not a variable name")
        if not self.env_prefix:
            raise ReferenceRefused(
                "env: references are off: set CONNWATCH_SECRET_ENV_PREFIX to the prefix of "
                "the variables connwatch may read"
            )
        if not name.startswith(self.env_prefix):
            raise ReferenceRefused(
                f"env: references must name a variable starting with {self.env_prefix!r} "
                "(CONNWATCH_SECRET_ENV_PREFIX)"
            )
        if name in self.forbidden_env:
            raise ReferenceRefused("env: references never read connwatch's own settings")

    def _check_file(self, raw: str) -> Path:
        if not raw or "\x00" in raw:
            raise ReferenceRefused("file: reference: not a path")
        path = Path(raw).expanduser()
        if not path.is_absolute():
            raise ReferenceRefused("file: references must be absolute paths")
        if not self.file_dirs:
            raise ReferenceRefused(
                "file: references are off: set CONNWATCH_SECRET_FILE_DIRS to the directories "
                "connwatch may read passwords from"
            )
        real = _real(path)
        if any(_inside(real, f) or _inside(f, real) for f in self.forbidden):
            raise ReferenceRefused(
                "file: references never read connwatch's key file or data directory"
            )
        if not any(_inside(real, d) for d in self.file_dirs):
            raise ReferenceRefused("file: references must point inside CONNWATCH_SECRET_FILE_DIRS")
        return real

    def resolve(self, ref: str) -> str:
        """The secret a reference names, after :meth:`check`."""
        self.check(ref)
        if ref.startswith("env:"):
            value = os.environ.get(ref[4:])
            if value is None:
                raise SecretError(
                    f"password reference {ref}: environment variable {ref[4:]} is not set"
                )
            return value
        return _read_file(ref, self._check_file(ref[5:]))


def _read_file(ref: str, real: Path) -> str:
    try:
        fd = os.open(real, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise SecretError(f"password reference {ref}: cannot read it: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SecretError(f"password reference {ref}: not a regular file")
        if st.st_size > MAX_SECRET_FILE_BYTES:
            raise SecretError(
                f"password reference {ref}: larger than {MAX_SECRET_FILE_BYTES} bytes"
            )
        data = os.read(fd, MAX_SECRET_FILE_BYTES + 1)
    finally:
        os.close(fd)
    try:
        text = data.decode()
    except UnicodeDecodeError:
        raise SecretError(f"password reference {ref}: not UTF-8 text") from None
    return text.rstrip("\r\n")


def resolve_reference(ref: str, settings: Settings | None = None) -> str:
    """Resolve a reference under the installation's allow lists (``settings``, or the
    process's settings): the only way connwatch turns a reference into a secret."""
    from app.config import get_settings

    return ReferencePolicy.from_settings(settings or get_settings()).resolve(ref)
